"""Issue 17, item 7, on the pages: the Studies page refuses a bad study name; the Data page shows an
import's look-alike warning.

Before this change the page created such a study (the store took any non-blank name). Now the
store's rule (:func:`peercore.store.studies.study_name_problem`) is checked first and its
sentence shown; nothing is created. An import whose names look like others of the study
(a Cyrillic letter in a contestant's name) is imported with a warning on the Data page.
"""

from __future__ import annotations

import pytest

from app_studies import app_test, open_page
from peercore.store import Store


@pytest.mark.parametrize("name", ["../../etc", "x" * 3000])
def test_the_studies_page_refuses_a_bad_name_with_a_message(name, db_file):
    at = open_page(app_test(), "studies")
    at.text_input(key="studies_new_name").input(name)
    next(b for b in at.button if b.label == "Create study").click().run()
    assert not at.exception  # before: the study was created (or a StoreError traceback)
    assert any("study name" in e.value for e in at.error)
    assert name not in set(Store(db_file).studies.table()["name"])


def test_the_data_page_shows_the_look_alike_warning_of_an_import(synthetic):
    # 'alpha' is a contestant of the synthetic study; 'аlpha' starts with a Cyrillic а: imported, and said so.
    upload = "question_id,model_a,model_b,judge,winner\nq-new,\u0430lpha,bravo,judge-new,model_a\n".encode()
    at = open_page(app_test(), "data")
    at.file_uploader(key="data_upload_0").set_value(("twin.csv", upload, "text/csv")).run()
    at.button(key="data_import").click().run()
    assert not at.exception
    (warning,) = [w.value for w in at.warning if "look alike" in w.value]
    assert "U+0061 LATIN SMALL LETTER A / U+0430 CYRILLIC SMALL LETTER A" in warning  # before: no word
    assert "\u0430lpha" in set(Store(synthetic["db"]).verdicts.table("synthetic")["model_a"])
