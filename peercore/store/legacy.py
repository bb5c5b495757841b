"""The frozen history of SQLite files made before the one schema (versions 1-8): :data:`LEGACY`.

A SQLite file created by an older PeerBoard is brought to version 8 by these steps, as
those files were made (version 2 rewrites ``judgments`` into ``verdicts``, version 3 reads
JSON with ``json_extract``, triggers in SQLite's syntax); :mod:`peercore.store.schema`
takes it from there. New databases never run them: they start from the schema's baseline.
Never edit them; a change to the schema is a new entry in ``schema.MIGRATIONS``.
"""

from __future__ import annotations

__all__ = ["LEGACY"]


LEGACY: list[tuple[int, str, str]] = [
    (1, "initial schema", """
CREATE TABLE studies (
    id          INTEGER PRIMARY KEY,
    name        TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    source      TEXT NOT NULL DEFAULT '{}',       -- JSON: where the data came from
    revision    INTEGER NOT NULL DEFAULT 0,       -- bumped by every write (cache stamp)
    created_at  TEXT NOT NULL
);
CREATE TABLE questions (
    study_id    INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    question_id TEXT NOT NULL,
    text        TEXT NOT NULL,
    category    TEXT NOT NULL DEFAULT '',
    reference   TEXT,
    PRIMARY KEY (study_id, question_id)
);
CREATE TABLE answers (
    study_id    INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    question_id TEXT NOT NULL,
    model       TEXT NOT NULL,
    turn        INTEGER NOT NULL DEFAULT 1,
    text        TEXT NOT NULL,
    run_id      TEXT,
    PRIMARY KEY (study_id, question_id, model, turn)
);
CREATE TABLE judges (
    study_id    INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    name        TEXT NOT NULL,
    kind        TEXT NOT NULL DEFAULT 'other'
                CHECK (kind IN ('llm', 'human', 'debate', 'adjudicator', 'vote', 'other')),
    model_alias TEXT,                              -- the contestant this judge is, if any
    settings    TEXT NOT NULL DEFAULT '{}',        -- JSON, secrets scrubbed
    PRIMARY KEY (study_id, name)
);
-- Optional canonical fields use '' / 0 for "not given" so natural keys stay unique
-- (SQLite treats NULLs as distinct in UNIQUE constraints).
CREATE TABLE judgments (
    id          INTEGER PRIMARY KEY,
    study_id    INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    question_id TEXT NOT NULL,
    model_a     TEXT NOT NULL,
    model_b     TEXT NOT NULL CHECK (model_b <> model_a),
    judge       TEXT NOT NULL,
    criterion   TEXT NOT NULL DEFAULT '',
    turn        INTEGER NOT NULL DEFAULT 0,
    round       INTEGER NOT NULL DEFAULT 0,
    vote        INTEGER NOT NULL DEFAULT 0,        -- k-th verdict by this judge on this key
    winner      TEXT CHECK (winner IN ('model_a', 'model_b', 'tie')),
    p_a         REAL CHECK (p_a IS NULL OR (p_a >= 0 AND p_a <= 1)),
    rationale   TEXT,
    valid       INTEGER NOT NULL DEFAULT 1 CHECK (valid IN (0, 1)),
    raw         TEXT,                              -- unparsed model output, kept when invalid
    run_id      TEXT,
    created_at  TEXT NOT NULL,
    CHECK (valid = 0 OR winner IS NOT NULL),
    UNIQUE (study_id, question_id, model_a, model_b, judge, criterion, turn, round, vote)
);
CREATE INDEX judgments_by_judge ON judgments (study_id, judge);
CREATE TABLE runs (
    id                TEXT PRIMARY KEY,
    study_id          INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    kind              TEXT NOT NULL,               -- answers, review, discussion, debate
    config            TEXT NOT NULL DEFAULT '{}',  -- JSON, secrets scrubbed
    status            TEXT NOT NULL DEFAULT 'pending'
                      CHECK (status IN ('pending', 'running', 'finished', 'failed', 'cancelled', 'interrupted')),
    n_items           INTEGER NOT NULL DEFAULT 0,
    n_done            INTEGER NOT NULL DEFAULT 0,
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    cost_usd          REAL NOT NULL DEFAULT 0,
    error             TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL
);
CREATE TABLE run_items (
    run_id     TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    item_key   TEXT NOT NULL,
    status     TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'done', 'failed', 'invalid')),
    detail     TEXT,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (run_id, item_key)
);
-- Every paid LLM call, keyed on (backend, model, parameters, messages, sample index).
CREATE TABLE llm_calls (
    cache_key         TEXT PRIMARY KEY,
    backend           TEXT NOT NULL,
    model             TEXT NOT NULL,
    request           TEXT NOT NULL,               -- JSON, no credentials
    response          TEXT NOT NULL,               -- JSON
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    latency_s         REAL,
    run_id            TEXT,
    created_at        TEXT NOT NULL
);
CREATE TABLE debates (
    id          INTEGER PRIMARY KEY,
    study_id    INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    debate_key  TEXT NOT NULL,                     -- natural key from the source or the run
    kind        TEXT NOT NULL DEFAULT 'debate' CHECK (kind IN ('debate', 'discussion')),
    question_id TEXT NOT NULL,
    model_a     TEXT NOT NULL,                     -- submission shown as 1
    model_b     TEXT NOT NULL,                     -- submission shown as 2
    criterion   TEXT NOT NULL DEFAULT '',
    scenario    TEXT NOT NULL DEFAULT '',
    status      TEXT NOT NULL CHECK (status IN ('agreed', 'unresolved', 'adjudicated')),
    consensus   TEXT CHECK (consensus IN ('model_a', 'model_b', 'tie')),
    n_rounds    INTEGER NOT NULL DEFAULT 0,
    metadata    TEXT NOT NULL DEFAULT '{}',
    run_id      TEXT,
    created_at  TEXT NOT NULL,
    UNIQUE (study_id, debate_key)
);
CREATE TABLE debate_turns (
    debate_id INTEGER NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    round     INTEGER NOT NULL,                    -- 0 = initial verdicts
    position  INTEGER NOT NULL,                    -- speaking order within the round
    speaker   TEXT NOT NULL,
    verdict   TEXT CHECK (verdict IN ('model_a', 'model_b', 'tie')),
    rationale TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (debate_id, round, speaker)
);
CREATE TABLE adjudications (
    id         INTEGER PRIMARY KEY,
    debate_id  INTEGER NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    annotator  TEXT NOT NULL,
    verdict    TEXT NOT NULL CHECK (verdict IN ('model_a', 'model_b', 'tie')),
    note       TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    UNIQUE (debate_id, annotator)
);
"""),
    (2, "integer-coded verdicts, labels, import provenance, question metadata", """
CREATE TABLE labels (
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    id       INTEGER NOT NULL CHECK (id > 0),
    text     TEXT NOT NULL,
    PRIMARY KEY (study_id, id),
    UNIQUE (study_id, text)
);
CREATE TABLE imports (
    id         INTEGER PRIMARY KEY,
    study_id   INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    source     TEXT NOT NULL,                      -- the file or folder, as given
    format     TEXT NOT NULL,
    sha256     TEXT,                               -- of the file (of the sorted files, for a folder)
    counts     TEXT NOT NULL DEFAULT '{}',         -- JSON: added / skipped per table, notes
    created_at TEXT NOT NULL
);
-- winner: 0 = model_a, 1 = model_b, 2 = tie, NULL = no verdict (valid = 0).
-- model_a, model_b, judge: labels.id; criterion: labels.id or 0 (not given).
CREATE TABLE verdicts (
    id          INTEGER PRIMARY KEY,               -- insertion order
    study_id    INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    question_id TEXT NOT NULL,
    model_a     INTEGER NOT NULL,
    model_b     INTEGER NOT NULL CHECK (model_b <> model_a),
    judge       INTEGER NOT NULL,
    criterion   INTEGER NOT NULL DEFAULT 0,
    turn        INTEGER NOT NULL DEFAULT 0,
    round       INTEGER NOT NULL DEFAULT 0,
    vote        INTEGER NOT NULL DEFAULT 0,
    -- OR chains, not "IN (0, 1, 2)": SQLite rebuilds an IN list's lookup table every
    -- time a statement is re-run, which tripled the cost of a bulk insert.
    winner      INTEGER CHECK (winner = 0 OR winner = 1 OR winner = 2),
    p_a         REAL CHECK (p_a IS NULL OR (p_a >= 0 AND p_a <= 1)),
    rationale   TEXT,
    valid       INTEGER NOT NULL DEFAULT 1 CHECK (valid = 0 OR valid = 1),
    raw         TEXT,
    run_id      TEXT,
    import_id   INTEGER REFERENCES imports(id) ON DELETE SET NULL,
    created_at  TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    CHECK (valid = 0 OR winner IS NOT NULL),
    -- model_a / model_b / judge / criterion are labels(study_id, id), but not declared
    -- as foreign keys: the four parent lookups per row were 40% of a bulk insert.
    -- Codes are only ever assigned by the store in the transaction that uses them, and
    -- labels are deleted only with their study (cascading to these rows too);
    -- Store.integrity_problems() checks it.
    UNIQUE (study_id, question_id, model_a, model_b, judge, criterion, turn, round, vote)
);
INSERT INTO labels (study_id, id, text)
SELECT study_id, ROW_NUMBER() OVER (PARTITION BY study_id ORDER BY text), text FROM (
    SELECT study_id, model_a AS text FROM judgments UNION SELECT study_id, model_b FROM judgments
    UNION SELECT study_id, judge FROM judgments UNION SELECT study_id, criterion FROM judgments WHERE criterion <> ''
);
INSERT INTO verdicts (id, study_id, question_id, model_a, model_b, judge, criterion, turn, round, vote, winner,
                      p_a, rationale, valid, raw, run_id, created_at)
SELECT j.id, j.study_id, j.question_id, la.id, lb.id, lj.id, COALESCE(lc.id, 0), j.turn, j.round, j.vote,
       CASE j.winner WHEN 'model_a' THEN 0 WHEN 'model_b' THEN 1 WHEN 'tie' THEN 2 END,
       j.p_a, j.rationale, j.valid, j.raw, j.run_id, j.created_at
FROM judgments j
JOIN labels la ON la.study_id = j.study_id AND la.text = j.model_a
JOIN labels lb ON lb.study_id = j.study_id AND lb.text = j.model_b
JOIN labels lj ON lj.study_id = j.study_id AND lj.text = j.judge
LEFT JOIN labels lc ON lc.study_id = j.study_id AND lc.text = j.criterion AND j.criterion <> ''
ORDER BY j.id;
-- Which optional columns a study has ever filled (a superset is fine): readers fetch
-- only those, without scanning a million rows to find out.
CREATE TABLE verdict_columns (
    study_id INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    name     TEXT NOT NULL CHECK (name IN ('p_a', 'criterion', 'turn', 'round', 'rationale', 'vote', 'raw')),
    PRIMARY KEY (study_id, name)
);
INSERT OR IGNORE INTO verdict_columns (study_id, name)
SELECT study_id, 'p_a' FROM verdicts WHERE p_a IS NOT NULL
UNION SELECT study_id, 'criterion' FROM verdicts WHERE criterion <> 0
UNION SELECT study_id, 'turn' FROM verdicts WHERE turn <> 0
UNION SELECT study_id, 'round' FROM verdicts WHERE round <> 0
UNION SELECT study_id, 'rationale' FROM verdicts WHERE rationale IS NOT NULL
UNION SELECT study_id, 'vote' FROM verdicts WHERE vote <> 0
UNION SELECT study_id, 'raw' FROM verdicts WHERE raw IS NOT NULL;
DROP INDEX judgments_by_judge;
DROP TABLE judgments;
-- (study_id, id) grows at its end on every insert (ids only increase), so it costs
-- little to maintain, and it gives each study's id range and count. An index on
-- (study_id, judge), as version 1 had, was dropped: random inserts into it cost 15% of
-- a million-row import, and it made SQLite read a study through the index and then
-- sort the rows back into insertion order. No index on import_id either (another 10%)
-- until something needs to find an import's rows quickly.
CREATE INDEX verdicts_by_study ON verdicts (study_id, id);
CREATE INDEX debates_by_status ON debates (study_id, status);
CREATE VIEW judgments AS
SELECT v.id, v.study_id, v.question_id, la.text AS model_a, lb.text AS model_b, lj.text AS judge,
       COALESCE(lc.text, '') AS criterion, v.turn, v.round, v.vote,
       CASE v.winner WHEN 0 THEN 'model_a' WHEN 1 THEN 'model_b' WHEN 2 THEN 'tie' END AS winner,
       v.p_a, v.rationale, v.valid, v.raw, v.run_id, v.import_id, v.created_at
FROM verdicts v
JOIN labels la ON la.study_id = v.study_id AND la.id = v.model_a
JOIN labels lb ON lb.study_id = v.study_id AND lb.id = v.model_b
JOIN labels lj ON lj.study_id = v.study_id AND lj.id = v.judge
LEFT JOIN labels lc ON lc.study_id = v.study_id AND lc.id = v.criterion;
CREATE TRIGGER judgments_insert INSTEAD OF INSERT ON judgments
BEGIN
    INSERT INTO labels (study_id, id, text)
    SELECT NEW.study_id, (SELECT COALESCE(MAX(id), 0) + 1 FROM labels WHERE study_id = NEW.study_id), NEW.model_a
    WHERE NOT EXISTS (SELECT 1 FROM labels WHERE study_id = NEW.study_id AND text = NEW.model_a);
    INSERT INTO labels (study_id, id, text)
    SELECT NEW.study_id, (SELECT COALESCE(MAX(id), 0) + 1 FROM labels WHERE study_id = NEW.study_id), NEW.model_b
    WHERE NOT EXISTS (SELECT 1 FROM labels WHERE study_id = NEW.study_id AND text = NEW.model_b);
    INSERT INTO labels (study_id, id, text)
    SELECT NEW.study_id, (SELECT COALESCE(MAX(id), 0) + 1 FROM labels WHERE study_id = NEW.study_id), NEW.judge
    WHERE NOT EXISTS (SELECT 1 FROM labels WHERE study_id = NEW.study_id AND text = NEW.judge);
    INSERT INTO labels (study_id, id, text)
    SELECT NEW.study_id, (SELECT COALESCE(MAX(id), 0) + 1 FROM labels WHERE study_id = NEW.study_id), NEW.criterion
    WHERE COALESCE(NEW.criterion, '') <> ''
      AND NOT EXISTS (SELECT 1 FROM labels WHERE study_id = NEW.study_id AND text = NEW.criterion);
    INSERT INTO verdicts (study_id, question_id, model_a, model_b, judge, criterion, turn, round, vote, winner,
                          p_a, rationale, valid, raw, run_id, import_id)
    VALUES (NEW.study_id, NEW.question_id,
            (SELECT id FROM labels WHERE study_id = NEW.study_id AND text = NEW.model_a),
            (SELECT id FROM labels WHERE study_id = NEW.study_id AND text = NEW.model_b),
            (SELECT id FROM labels WHERE study_id = NEW.study_id AND text = NEW.judge),
            COALESCE((SELECT id FROM labels WHERE study_id = NEW.study_id AND text = NEW.criterion), 0),
            COALESCE(NEW.turn, 0), COALESCE(NEW.round, 0), COALESCE(NEW.vote, 0),
            CASE NEW.winner WHEN 'model_a' THEN 0 WHEN 'model_b' THEN 1 WHEN 'tie' THEN 2 END,
            NEW.p_a, NEW.rationale, COALESCE(NEW.valid, 1), NEW.raw, NEW.run_id, NEW.import_id);
    INSERT OR IGNORE INTO verdict_columns (study_id, name)
    SELECT NEW.study_id, 'p_a' WHERE NEW.p_a IS NOT NULL
    UNION ALL SELECT NEW.study_id, 'criterion' WHERE COALESCE(NEW.criterion, '') <> ''
    UNION ALL SELECT NEW.study_id, 'turn' WHERE COALESCE(NEW.turn, 0) <> 0
    UNION ALL SELECT NEW.study_id, 'round' WHERE COALESCE(NEW.round, 0) <> 0
    UNION ALL SELECT NEW.study_id, 'rationale' WHERE NEW.rationale IS NOT NULL
    UNION ALL SELECT NEW.study_id, 'vote' WHERE COALESCE(NEW.vote, 0) <> 0
    UNION ALL SELECT NEW.study_id, 'raw' WHERE NEW.raw IS NOT NULL;
END;
ALTER TABLE questions ADD COLUMN metadata TEXT NOT NULL DEFAULT '{}';
ALTER TABLE debate_turns ADD COLUMN raw TEXT;
"""),
    (3, "judge identities, debate panels, paid calls per item, decision tokens", """
-- A judge is its whole configuration (peercore.judges): runs register the identity they
-- ran with and its fingerprint; imports register names only (origin 'import').
ALTER TABLE judges ADD COLUMN origin TEXT NOT NULL DEFAULT 'import'
    CHECK (origin IN ('import', 'run', 'derived'));
ALTER TABLE judges ADD COLUMN fingerprint TEXT;
ALTER TABLE judges ADD COLUMN base TEXT;
ALTER TABLE judges ADD COLUMN created_at TEXT;
UPDATE judges SET origin = 'run' WHERE json_extract(settings, '$.backend') IS NOT NULL;
UPDATE judges SET base = name;
CREATE UNIQUE INDEX judges_by_fingerprint ON judges (study_id, fingerprint) WHERE fingerprint IS NOT NULL;
-- The panel of a debate is its consensus judge (debate:<name>); gold is per panel.
ALTER TABLE debates ADD COLUMN panel TEXT NOT NULL DEFAULT '';
UPDATE debates SET panel = 'debate:' || json_extract(metadata, '$.name')
    WHERE kind = 'debate' AND json_extract(metadata, '$.name') IS NOT NULL;
-- Which run item paid for a call (accounting: every paid call ends stored or failed).
ALTER TABLE llm_calls ADD COLUMN item_key TEXT;
CREATE INDEX llm_calls_by_run ON llm_calls (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX verdicts_by_run ON verdicts (run_id) WHERE run_id IS NOT NULL;
-- A decision's token: undo removes a decision only where the same tab made it.
ALTER TABLE adjudications ADD COLUMN token TEXT;
"""),
    (4, "human scores and judges' absolute scores (NLG assessment)", """
-- A human rating of one candidate (model) on one attribute in one context (question_id),
-- on the attribute's own scale (TopicalChat USR: coherence 1-3, understandability 0-1).
CREATE TABLE human_scores (
    study_id    INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    question_id TEXT NOT NULL,                     -- the context
    model       TEXT NOT NULL,                     -- the candidate (system)
    attribute   TEXT NOT NULL CHECK (attribute <> ''),
    value       REAL NOT NULL CHECK (value >= -1e12 AND value <= 1e12),
    import_id   INTEGER REFERENCES imports(id) ON DELETE SET NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (study_id, question_id, model, attribute)
);
-- A judge's absolute score of one candidate (prompt scoring, one call per candidate):
-- score = the number read from the reply's text, expected = the expected score over the
-- score tokens' probabilities (NULL without probabilities), distribution = JSON
-- {label: probability}. An unreadable reply is kept with valid = 0 and its raw text.
CREATE TABLE judge_scores (
    id           INTEGER PRIMARY KEY,
    study_id     INTEGER NOT NULL REFERENCES studies(id) ON DELETE CASCADE,
    question_id  TEXT NOT NULL,
    model        TEXT NOT NULL,
    judge        TEXT NOT NULL,
    attribute    TEXT NOT NULL DEFAULT '',
    vote         INTEGER NOT NULL DEFAULT 0 CHECK (vote >= 0 AND vote <= 1000000),
    score        REAL CHECK (score IS NULL OR (score >= -1e12 AND score <= 1e12)),
    expected     REAL CHECK (expected IS NULL OR (expected >= -1e12 AND expected <= 1e12)),
    distribution TEXT,
    valid        INTEGER NOT NULL DEFAULT 1 CHECK (valid = 0 OR valid = 1),
    rationale    TEXT,
    raw          TEXT,
    run_id       TEXT,
    import_id    INTEGER REFERENCES imports(id) ON DELETE SET NULL,
    created_at   TEXT NOT NULL,
    CHECK (valid = 0 OR score IS NOT NULL OR expected IS NOT NULL),
    UNIQUE (study_id, question_id, model, judge, attribute, vote)
);
CREATE INDEX judge_scores_by_run ON judge_scores (run_id) WHERE run_id IS NOT NULL;
"""),
    (5, "adjudication guidelines: study rubric and overlap, both-bad decisions, blind flag, skips per annotator", """
-- "Both bad" (Arena's "tie (bothbad)", a label of its own in Argilla / Label Studio
-- queues) is stored as verdict 'tie' with both_bad = 1: every reader of verdicts (the
-- gold set, agreement) sees a tie, and the annotator's exact choice is kept.
ALTER TABLE adjudications ADD COLUMN both_bad INTEGER NOT NULL DEFAULT 0
    CHECK (both_bad = 0 OR (both_bad = 1 AND verdict = 'tie'));
-- 1: decided before seeing the agents' verdicts and reasons (blind mode), 0: after,
-- NULL: not recorded (decisions made before version 5, imports).
ALTER TABLE adjudications ADD COLUMN blind INTEGER CHECK (blind IS NULL OR blind = 0 OR blind = 1);
-- A skip belongs to its annotator (in any browser, on any day) until they clear it.
CREATE TABLE adjudication_skips (
    debate_id  INTEGER NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    annotator  TEXT NOT NULL CHECK (annotator <> ''),
    created_at TEXT NOT NULL,
    PRIMARY KEY (debate_id, annotator)
);
-- The study's adjudication guidelines (plain text shown beside every item) and how many
-- annotators each debate needs (0 = every annotator decides every debate).
ALTER TABLE studies ADD COLUMN rubric TEXT NOT NULL DEFAULT '';
ALTER TABLE studies ADD COLUMN overlap INTEGER NOT NULL DEFAULT 0 CHECK (overlap >= 0 AND overlap <= 1000);
"""),
    (6, "adjudication leases: item assignment to annotators (issue 13)", """
-- An annotator holds a debate until expires_at (peercore.assignment): with an overlap N,
-- a debate is offered while its decisions plus the live leases of others are fewer than N.
-- Times are fixed-width ISO-8601 UTC text (as every created_at here), so they compare as
-- text; PostgreSQL would use TIMESTAMPTZ and the server's now().
CREATE TABLE adjudication_leases (
    debate_id  INTEGER NOT NULL REFERENCES debates(id) ON DELETE CASCADE,
    annotator  TEXT NOT NULL CHECK (annotator <> ''),
    expires_at TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (debate_id, annotator)
);
CREATE INDEX adjudication_leases_by_annotator ON adjudication_leases (annotator, debate_id);
"""),
    (7, "provider batches: batch ids, uploaded files and each request's custom_id (issue 13)", """
-- A judging run sent through a provider's batch API (peercore.jobs.batch): one row per
-- batch, written BEFORE each step that could be lost (the upload, the create, the poll),
-- so a killed run resumes the same batch instead of paying for it twice. token is the
-- client's deterministic name for the batch (the uploaded file's name, OpenAI metadata).
CREATE TABLE batches (
    token           TEXT PRIMARY KEY,
    run_id          TEXT NOT NULL,
    provider        TEXT NOT NULL CHECK (provider IN ('openai', 'anthropic')),
    judge           TEXT NOT NULL,                 -- backend:model
    base_url        TEXT,
    status          TEXT NOT NULL DEFAULT 'planned'
        CHECK (status IN ('planned', 'uploaded', 'creating', 'submitted', 'ended', 'fetched')),
    input_file_id   TEXT,
    batch_id        TEXT UNIQUE,
    provider_status TEXT,
    output_file_id  TEXT,
    error_file_id   TEXT,
    n_requests      INTEGER NOT NULL CHECK (n_requests >= 1),
    n_succeeded     INTEGER NOT NULL DEFAULT 0,
    n_failed        INTEGER NOT NULL DEFAULT 0,
    intent_at       TEXT,                          -- just before create: resume looks for batches made after it
    created_at      TEXT NOT NULL,
    updated_at      TEXT NOT NULL
);
CREATE INDEX batches_by_run ON batches (run_id);
-- Each request line of a batch: custom_id -> the call (cache key) and the run item that pays for it.
CREATE TABLE batch_requests (
    token     TEXT NOT NULL REFERENCES batches(token) ON DELETE CASCADE,
    custom_id TEXT NOT NULL,
    cache_key TEXT NOT NULL,
    item_key  TEXT NOT NULL,
    request   TEXT NOT NULL,                       -- the ChatRequest as JSON (never a credential)
    status    TEXT NOT NULL DEFAULT 'pending'
        CHECK (status IN ('pending', 'succeeded', 'errored', 'expired', 'canceled')),
    error     TEXT,
    PRIMARY KEY (token, custom_id)
);
CREATE INDEX batch_requests_by_key ON batch_requests (cache_key);
"""),
    (8, "verdict tally index: counts per judge, pair, validity and winner by a covering index scan (issue 12)", """
-- Every page of the dashboard starts from counts of a study's verdicts per judge, ordered
-- pair, validity and winner (peercore.aggregates.verdict_tally): the pair tally that
-- Bradley-Terry, the judges' health and the Studies page need. With this index SQLite
-- answers that GROUP BY as one ordered scan of the index (about 0.2 s for a million
-- verdicts) instead of sorting the rows into a temporary B-tree (about 1.5 s); p_a is in
-- it so that counting the verdicts with a probability reads nothing else.
CREATE INDEX verdicts_tally ON verdicts (study_id, judge, model_a, model_b, valid, winner, p_a);
"""),
]
