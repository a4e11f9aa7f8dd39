#include "crcrd/store/schema.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <string_view>

#include <spdlog/spdlog.h>

#include "crcrd/store/daily.hpp"
#include "crcrd/store/sqlite.hpp"

namespace crcrd::store {

namespace {

// Each entry takes the schema from version i to i+1. Never edit a released entry; append.
constexpr std::array<const char*, 23> k_migrations = {
    R"sql(
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE runs (
  id          INTEGER PRIMARY KEY,
  event       TEXT NOT NULL CHECK (event IN ('pull_request','push','schedule','manual')),
  action      TEXT,
  sha         TEXT NOT NULL CHECK (length(sha) = 40 AND sha = lower(sha)),
  pr          INTEGER,
  ref         TEXT,
  base_ref    TEXT,
  base_sha    TEXT,
  head_repo   TEXT,
  labels      TEXT NOT NULL DEFAULT '[]',
  delivery_id TEXT,
  state       TEXT NOT NULL CHECK (state IN ('queued','running','completed','cancelled')),
  conclusion  TEXT,
  reason      TEXT,
  inputs      TEXT NOT NULL DEFAULT '{}',
  created_at  TEXT NOT NULL,
  finished_at TEXT
);
CREATE INDEX runs_by_pr ON runs (pr, state);
CREATE INDEX runs_by_sha ON runs (sha);
CREATE INDEX runs_by_state ON runs (state);

-- A run's SHA never changes.
CREATE TRIGGER runs_sha_immutable BEFORE UPDATE OF sha ON runs
BEGIN SELECT RAISE(ABORT, 'a run''s sha never changes'); END;

CREATE TABLE deliveries (
  id               INTEGER PRIMARY KEY,
  delivery_id      TEXT,
  crcr_delivery_id TEXT,
  received_at      TEXT NOT NULL,
  scheme           TEXT,
  event            TEXT,
  verdict          TEXT NOT NULL CHECK (verdict IN ('queued','duplicate','ignored','cancelled','pong','rejected')),
  http_status      INTEGER NOT NULL,
  reason           TEXT,
  run_id           INTEGER REFERENCES runs (id),
  run_ids          TEXT,
  remote           TEXT,
  body             BLOB,             -- zstd-compressed request body (accepted deliveries only)
  body_size        INTEGER           -- its size before compression
);
CREATE INDEX deliveries_by_verdict ON deliveries (verdict, id);

-- Idempotency keys of accepted deliveries: "transport:<id>" and "crcr:<delivery_id>".
CREATE TABLE delivery_keys (
  key          TEXT PRIMARY KEY,
  delivery_row INTEGER NOT NULL REFERENCES deliveries (id),
  run_id       INTEGER REFERENCES runs (id)
) WITHOUT ROWID;
)sql",
    // 2: selection and jobs.
    R"sql(
ALTER TABLE runs ADD COLUMN selection TEXT;  -- the explanation (JSON), set once the run is planned
ALTER TABLE runs ADD COLUMN concurrency_group TEXT;  -- "pr:<n>", "branch:<ref>" or NULL
CREATE INDEX runs_by_group ON runs (concurrency_group, state);

CREATE TABLE jobs (
  id          INTEGER PRIMARY KEY,
  run_id      INTEGER NOT NULL REFERENCES runs (id),
  tier        TEXT NOT NULL,
  position    INTEGER NOT NULL,               -- the tier's place in the rules file
  state       TEXT NOT NULL CHECK (state IN ('queued','leased','running','completed','cancelled')),
  conclusion  TEXT,
  reason      TEXT,
  attempt     INTEGER NOT NULL DEFAULT 1,
  slot        TEXT,
  tests       TEXT NOT NULL DEFAULT '[]',
  timeout_ms  INTEGER NOT NULL,
  exit_status INTEGER,
  metadata    TEXT,
  created_at  TEXT NOT NULL,
  started_at  TEXT,
  finished_at TEXT
);
CREATE INDEX jobs_by_run ON jobs (run_id, position);
CREATE INDEX jobs_by_state ON jobs (state);
)sql",
    // 3: execution: runner slots and their leases, per-test results, job details.
    R"sql(
CREATE TABLE slots (
  name             TEXT PRIMARY KEY,
  state            TEXT NOT NULL DEFAULT 'idle' CHECK (state IN ('idle','busy','offline')),
  drained          INTEGER NOT NULL DEFAULT 0,
  job_id           INTEGER,
  lease_expires_at TEXT,
  last_health      TEXT,               -- JSON: {ok, at, exit_status, output}
  next_health_at   TEXT
) WITHOUT ROWID;

ALTER TABLE jobs ADD COLUMN labels TEXT NOT NULL DEFAULT '[]';  -- runner labels the tier needs
ALTER TABLE jobs ADD COLUMN pgid INTEGER;                        -- the test command's process group
ALTER TABLE jobs ADD COLUMN log_path TEXT;
ALTER TABLE jobs ADD COLUMN counts TEXT;                         -- {"passed","failed","skipped","flaky"}

CREATE TABLE test_results (
  job_id     INTEGER NOT NULL REFERENCES jobs (id),
  name       TEXT NOT NULL,
  outcome    TEXT NOT NULL,
  duration_s REAL,
  message    TEXT
);
CREATE INDEX test_results_by_job ON test_results (job_id, outcome);
)sql",
    // 4: classification evidence, the outbox of statuses and callbacks.
    R"sql(
ALTER TABLE jobs ADD COLUMN evidence TEXT;  -- JSON: what the classification rests on

CREATE TABLE outbox (
  id              INTEGER PRIMARY KEY,             -- the order of sending
  sink            TEXT NOT NULL CHECK (sink IN ('github','file','callback')),
  run_id          INTEGER NOT NULL REFERENCES runs (id),
  sha             TEXT NOT NULL,
  context         TEXT NOT NULL,
  state           TEXT NOT NULL,                   -- pending|success|failure|error; in_progress|completed
  description     TEXT NOT NULL DEFAULT '',
  target_url      TEXT,
  body            TEXT,                            -- a callback's JSON body
  delivery        TEXT NOT NULL DEFAULT 'waiting'
                  CHECK (delivery IN ('waiting','sent','dead','coalesced')),
  attempts        INTEGER NOT NULL DEFAULT 0,
  next_attempt_at TEXT,
  last_error      TEXT,
  http_status     INTEGER,
  created_at      TEXT NOT NULL,
  sent_at         TEXT
);
CREATE INDEX outbox_by_delivery ON outbox (delivery, id);
CREATE INDEX outbox_by_key ON outbox (sink, sha, context, delivery);
CREATE INDEX outbox_by_run ON outbox (run_id, context);

-- Runs whose statuses may have changed; drained into the outbox before each commit.
CREATE TABLE status_dirty (run_id INTEGER PRIMARY KEY) WITHOUT ROWID;
CREATE TRIGGER runs_mark_status AFTER UPDATE OF state ON runs
BEGIN INSERT OR IGNORE INTO status_dirty (run_id) VALUES (NEW.id); END;
CREATE TRIGGER jobs_insert_mark_status AFTER INSERT ON jobs
BEGIN INSERT OR IGNORE INTO status_dirty (run_id) VALUES (NEW.run_id); END;
CREATE TRIGGER jobs_update_mark_status AFTER UPDATE OF state ON jobs
BEGIN INSERT OR IGNORE INTO status_dirty (run_id) VALUES (NEW.run_id); END;
)sql",
    // 5: missed-delivery recovery (docs/ingest.md).
    R"sql(
CREATE TABLE recovery_passes (
  id           INTEGER PRIMARY KEY,
  started_at   TEXT NOT NULL,
  finished_at  TEXT NOT NULL,
  since        TEXT NOT NULL,            -- the watermark the pass listed back to
  listed       INTEGER NOT NULL,         -- deliveries GitHub listed since then
  failed       INTEGER NOT NULL,         -- guids none of whose deliveries succeeded
  redelivered  INTEGER NOT NULL,         -- redeliveries asked for
  errors       TEXT NOT NULL DEFAULT '[]'
);
-- A guid crcrd asked GitHub to redeliver: never asked twice.
CREATE TABLE recovery_redelivered (
  guid        TEXT PRIMARY KEY,
  delivery    INTEGER NOT NULL,          -- GitHub's id of the delivery redelivered
  at          TEXT NOT NULL
) WITHOUT ROWID;
)sql",
    // 6: executors that run a job elsewhere (docs/execution.md): the id it runs under there.
    R"sql(
ALTER TABLE jobs ADD COLUMN external_id TEXT;  -- Slurm's job id; adopted after a restart
)sql",
    // 7: pre-existing failures (docs/verdicts.md): the base branch's recent runs.
    R"sql(
CREATE INDEX runs_by_ref ON runs (ref, finished_at);
)sql",
    // 8: bisection of trunk regressions (docs/verdicts.md) and the selection-miss audit
    // (docs/verdicts.md). runs.event gains 'bisect': the CHECK is widened in place (SQLite's
    // documented way for a constraint that only loosens; every stored row still satisfies it), and
    // the connection rereads the schema (RESET) before anything else runs.
    R"sql(
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(sql, '''pull_request'',''push'',''schedule'',''manual'')',
                                            '''pull_request'',''push'',''schedule'',''manual'',''bisect'')')
 WHERE type = 'table' AND name = 'runs';
PRAGMA writable_schema = RESET;

CREATE TABLE bisections (
  id          INTEGER PRIMARY KEY,
  bad_run_id  INTEGER NOT NULL UNIQUE REFERENCES runs (id),
  tier        TEXT NOT NULL,
  tests       TEXT NOT NULL,              -- JSON: the failing test ids bisected
  state       TEXT NOT NULL CHECK (state IN ('running','found','range','budget_spent','inconclusive','no_good','cancelled','failed')),
  reason      TEXT,
  good_run_id INTEGER REFERENCES runs (id),
  good_sha    TEXT,
  bad_sha     TEXT NOT NULL,
  commits     TEXT NOT NULL DEFAULT '[]', -- JSON: first-parent commits after good up to bad, oldest first
  culprit     TEXT,
  created_at  TEXT NOT NULL,
  finished_at TEXT
);
CREATE INDEX bisections_open ON bisections (state) WHERE state = 'running';
ALTER TABLE runs ADD COLUMN bisection_id INTEGER REFERENCES bisections (id);  -- a bisect run's bisection
CREATE INDEX runs_by_bisection ON runs (bisection_id) WHERE bisection_id IS NOT NULL;

CREATE TABLE selection_misses (
  id              INTEGER PRIMARY KEY,
  run_id          INTEGER NOT NULL REFERENCES runs (id),  -- the scheduled run that failed the test
  previous_run_id INTEGER NOT NULL REFERENCES runs (id),  -- the scheduled run before, where it passed
  tier            TEXT NOT NULL,
  test            TEXT NOT NULL,
  commits         TEXT NOT NULL,  -- JSON: [{sha, subject, paths, rules, runs}] between the two runs
  created_at      TEXT NOT NULL,
  UNIQUE (run_id, test)
);

-- A base check (classify.base_check: run, docs/verdicts.md): an attempt of a PR's tier on its base SHA
-- that runs only the failing tests no earlier run answered for.
ALTER TABLE jobs ADD COLUMN sha TEXT;         -- the SHA this attempt runs on, when not its run's
ALTER TABLE jobs ADD COLUMN base_check TEXT;  -- JSON: the PR's failing tests it checks; NULL otherwise

-- Work a finished run leaves for the planner's thread (it needs git): a trunk regression to
-- bisect, a bisect run whose result moves its bisection on, a full-matrix failure to audit.
CREATE TABLE followups (
  run_id INTEGER NOT NULL REFERENCES runs (id),
  kind   TEXT NOT NULL CHECK (kind IN ('bisect','bisect_step','audit')),
  PRIMARY KEY (run_id, kind)
) WITHOUT ROWID;
CREATE TRIGGER runs_followups AFTER UPDATE OF state ON runs
WHEN NEW.state IN ('completed','cancelled') AND OLD.state IN ('queued','running')
BEGIN
  INSERT OR IGNORE INTO followups (run_id, kind) SELECT NEW.id, 'bisect'
   WHERE NEW.state = 'completed' AND NEW.conclusion = 'regression' AND NEW.event IN ('push','schedule');
  INSERT OR IGNORE INTO followups (run_id, kind) SELECT NEW.id, 'audit'
   WHERE NEW.state = 'completed' AND NEW.conclusion = 'regression' AND NEW.event = 'schedule';
  INSERT OR IGNORE INTO followups (run_id, kind) SELECT NEW.id, 'bisect_step' WHERE NEW.event = 'bisect';
END;
)sql",
    // 9: the runs list's filters at a million runs (docs/performance-history.md): a class, an
    // event or a time window is found through its index, newest first (an index entry carries
    // the rowid, so "conclusion = ? AND id < ? ORDER BY id DESC" walks it backwards), never by
    // walking the whole history for a class that is rare.
    R"sql(
CREATE INDEX runs_by_conclusion ON runs (conclusion);
CREATE INDEX runs_by_event ON runs (event);
CREATE INDEX runs_by_conclusion_event ON runs (conclusion, event);
CREATE INDEX runs_by_created ON runs (created_at);
)sql",
    // 10: a run's deliveries (the relay callback's dispatch record, read by the outbox hook at
    // every commit that touches the run) through an index, not by walking every accepted
    // delivery: with a production configuration ingest slowed down as the history grew
    // (issue 16: 215 deliveries/s after 3,000).
    R"sql(
CREATE INDEX deliveries_by_run ON deliveries (run_id) WHERE run_id IS NOT NULL;
)sql",
    // 11: the planner's next runs (queued, not planned yet) through an index of only those:
    // through runs_by_state it walked every queued run that was already planned and waits for
    // a runner, at every pass (a backlog of thousands after a burst).
    R"sql(
CREATE INDEX runs_unplanned ON runs (id) WHERE state = 'queued' AND selection IS NULL;
)sql",
    // 12: the dispatcher's startable jobs, in run order, through an index of only the queued
    // jobs: through jobs_by_state it read and sorted every queued job at each pass, and under
    // a backlog of thousands that query took a quarter of the daemon's CPU (issue 16). Also a
    // run's earliest queued tier.
    R"sql(
CREATE INDEX jobs_queued ON jobs (run_id, position, id) WHERE state = 'queued';
)sql",
    // 13: no temporary tables in the writer's everyday statements (issue 16). A CHECK of the
    // form `x IN (three or more constants)` makes SQLite build a temporary B-tree of the
    // constants each time a statement checks it (a pager opened and closed, its pages
    // allocated), which the writer paid in most inserts and state changes: the runs',
    // deliveries', jobs', slots' and outbox's, a few per delivery. The same constraints written
    // as comparisons are evaluated inline. They allow exactly the values they allowed, so every
    // stored row still satisfies them and the text is rewritten in place as in 8; migrate()
    // then moves the schema's version on, so that every connection rereads it.
    R"sql(
PRAGMA writable_schema = ON;
UPDATE sqlite_schema SET sql = replace(replace(sql,
    'event IN (''pull_request'',''push'',''schedule'',''manual'',''bisect'')',
    'event = ''pull_request'' OR event = ''push'' OR event = ''schedule'' OR event = ''manual'' OR event = ''bisect'''),
    'state IN (''queued'',''running'',''completed'',''cancelled'')',
    'state = ''queued'' OR state = ''running'' OR state = ''completed'' OR state = ''cancelled''')
 WHERE type = 'table' AND name = 'runs';
UPDATE sqlite_schema SET sql = replace(sql,
    'verdict IN (''queued'',''duplicate'',''ignored'',''cancelled'',''pong'',''rejected'')',
    'verdict = ''queued'' OR verdict = ''duplicate'' OR verdict = ''ignored'' OR verdict = ''cancelled'' OR verdict = ''pong'' OR verdict = ''rejected''')
 WHERE type = 'table' AND name = 'deliveries';
UPDATE sqlite_schema SET sql = replace(sql,
    'state IN (''queued'',''leased'',''running'',''completed'',''cancelled'')',
    'state = ''queued'' OR state = ''leased'' OR state = ''running'' OR state = ''completed'' OR state = ''cancelled''')
 WHERE type = 'table' AND name = 'jobs';
UPDATE sqlite_schema SET sql = replace(sql,
    'state IN (''idle'',''busy'',''offline'')',
    'state = ''idle'' OR state = ''busy'' OR state = ''offline''')
 WHERE type = 'table' AND name = 'slots';
UPDATE sqlite_schema SET sql = replace(replace(sql,
    'sink IN (''github'',''file'',''callback'')',
    'sink = ''github'' OR sink = ''file'' OR sink = ''callback'''),
    'delivery IN (''waiting'',''sent'',''dead'',''coalesced'')',
    'delivery = ''waiting'' OR delivery = ''sent'' OR delivery = ''dead'' OR delivery = ''coalesced''')
 WHERE type = 'table' AND name = 'outbox';
UPDATE sqlite_schema SET sql = replace(sql,
    'state IN (''running'',''found'',''range'',''budget_spent'',''inconclusive'',''no_good'',''cancelled'',''failed'')',
    'state = ''running'' OR state = ''found'' OR state = ''range'' OR state = ''budget_spent'' OR state = ''inconclusive'' OR state = ''no_good'' OR state = ''cancelled'' OR state = ''failed''')
 WHERE type = 'table' AND name = 'bisections';
UPDATE sqlite_schema SET sql = replace(sql,
    'kind IN (''bisect'',''bisect_step'',''audit'')',
    'kind = ''bisect'' OR kind = ''bisect_step'' OR kind = ''audit''')
 WHERE type = 'table' AND name = 'followups';
PRAGMA writable_schema = RESET;

-- The follow-ups of a finished run, each its own trigger with its condition, inserting VALUES:
-- an INSERT ... SELECT into a table with a trigger (followups has the events' one) first fills
-- a temporary table, three of them at every run that finished.
DROP TRIGGER runs_followups;
CREATE TRIGGER runs_followups_bisect AFTER UPDATE OF state ON runs
WHEN NEW.state = 'completed' AND OLD.state IN ('queued','running') AND NEW.conclusion = 'regression'
 AND NEW.event IN ('push','schedule')
BEGIN INSERT OR IGNORE INTO followups (run_id, kind) VALUES (NEW.id, 'bisect'); END;
CREATE TRIGGER runs_followups_audit AFTER UPDATE OF state ON runs
WHEN NEW.state = 'completed' AND OLD.state IN ('queued','running') AND NEW.conclusion = 'regression'
 AND NEW.event = 'schedule'
BEGIN INSERT OR IGNORE INTO followups (run_id, kind) VALUES (NEW.id, 'audit'); END;
CREATE TRIGGER runs_followups_bisect_step AFTER UPDATE OF state ON runs
WHEN NEW.state IN ('completed','cancelled') AND OLD.state IN ('queued','running') AND NEW.event = 'bisect'
BEGIN INSERT OR IGNORE INTO followups (run_id, kind) VALUES (NEW.id, 'bisect_step'); END;
)sql",
    // 14: the follow-ups a finished run leaves are decided by followups_after() (core/vocab.hpp)
    // where the run ends (store/runs.cpp), not by triggers.
    R"sql(
DROP TRIGGER runs_followups_bisect;
DROP TRIGGER runs_followups_audit;
DROP TRIGGER runs_followups_bisect_step;
)sql",
    // 15: the outbox's gauges as counts kept with the rows (issue 32): a scrape counted the
    // waiting and dead rows of each sink through outbox_by_delivery, work that grew with the
    // backlog and, for dead letters, with the history. Each (sink, delivery) pair has its rows
    // counted, and of them those whose last attempt was answered 401 or 403, whatever the
    // values (a new delivery state needs no new trigger). The triggers decide nothing; every
    // statement in them inserts VALUES or updates by primary key, so none fills a temporary
    // table (migration 13).
    R"sql(
CREATE TABLE outbox_counts (
  sink     TEXT NOT NULL,
  delivery TEXT NOT NULL,
  n        INTEGER NOT NULL DEFAULT 0,  -- the outbox rows with this sink and delivery
  rejected INTEGER NOT NULL DEFAULT 0,  -- of them, last answered 401 or 403
  PRIMARY KEY (sink, delivery)
) WITHOUT ROWID;
INSERT INTO outbox_counts (sink, delivery, n, rejected)
  SELECT sink, delivery, count(*), sum(http_status IS 401 OR http_status IS 403)
    FROM outbox GROUP BY sink, delivery;

CREATE TRIGGER outbox_counts_insert AFTER INSERT ON outbox
BEGIN
  INSERT INTO outbox_counts (sink, delivery, n, rejected)
  VALUES (NEW.sink, NEW.delivery, 1, NEW.http_status IS 401 OR NEW.http_status IS 403)
  ON CONFLICT (sink, delivery) DO UPDATE SET n = n + 1, rejected = rejected + excluded.rejected;
END;
CREATE TRIGGER outbox_counts_update AFTER UPDATE OF sink, delivery, http_status ON outbox
WHEN NEW.sink IS NOT OLD.sink OR NEW.delivery IS NOT OLD.delivery
  OR (NEW.http_status IS 401 OR NEW.http_status IS 403) <> (OLD.http_status IS 401 OR OLD.http_status IS 403)
BEGIN
  UPDATE outbox_counts SET n = n - 1, rejected = rejected - (OLD.http_status IS 401 OR OLD.http_status IS 403)
   WHERE sink = OLD.sink AND delivery = OLD.delivery;
  INSERT INTO outbox_counts (sink, delivery, n, rejected)
  VALUES (NEW.sink, NEW.delivery, 1, NEW.http_status IS 401 OR NEW.http_status IS 403)
  ON CONFLICT (sink, delivery) DO UPDATE SET n = n + 1, rejected = rejected + excluded.rejected;
END;
CREATE TRIGGER outbox_counts_delete AFTER DELETE ON outbox
BEGIN
  UPDATE outbox_counts SET n = n - 1, rejected = rejected - (OLD.http_status IS 401 OR OLD.http_status IS 403)
   WHERE sink = OLD.sink AND delivery = OLD.delivery;
END;
)sql",
    // 16: one lane per sink (docs/reporting.md, "Lanes and budget"). `priority` is the GitHub
    // lane's order (report::status_priority; 0 for the other sinks; a waiting row from before
    // is a tier's final state or a first state, its context unknown here); `tried` counts the
    // requests made for a row, written before each one, and `refused` the answers among them
    // that say the request was not acted on (4xx); report_requests holds the requests of the last
    // day, for each lane's budget across restarts. The lanes read their waiting rows through
    // partial indexes that hold only waiting rows, so a lane's read costs what it has waiting,
    // not the outbox's history or the other lanes' backlog.
    R"sql(
ALTER TABLE outbox ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox ADD COLUMN tried INTEGER NOT NULL DEFAULT 0;
ALTER TABLE outbox ADD COLUMN refused INTEGER NOT NULL DEFAULT 0;
UPDATE outbox SET tried = attempts WHERE delivery IN ('waiting','dead');
UPDATE outbox SET priority = CASE WHEN state = 'pending' THEN 2 ELSE 1 END
 WHERE sink = 'github' AND delivery = 'waiting';
CREATE INDEX outbox_fifo ON outbox (sink, id) WHERE delivery = 'waiting';
CREATE INDEX outbox_by_priority ON outbox (priority, run_id DESC, id)
  WHERE sink = 'github' AND delivery = 'waiting';
CREATE INDEX outbox_retry ON outbox (sink, next_attempt_at)
  WHERE delivery = 'waiting' AND next_attempt_at IS NOT NULL;
CREATE TABLE report_requests (
  id   INTEGER PRIMARY KEY,
  sink TEXT NOT NULL,
  at   TEXT NOT NULL            -- when the request was made (RFC 3339)
);
CREATE INDEX report_requests_by_sink ON report_requests (sink, at);
)sql",
    // 17: each request remembers the priority of the row it carried, so that the GitHub lane's
    // shares (report::status_share) count across restarts. Earlier requests count as verdicts:
    // they use the whole budget but none of a lower priority's share.
    R"sql(
ALTER TABLE report_requests ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
)sql",
    // 18: the build stage (docs/build.md). One row per build key: its state, the attempt
    // building it now or last, its size once published and when a run last used it (the
    // cache's LRU order). A run's build job names the build it makes or waits on in
    // `jobs.build_key`; the runs waiting on a build are the open jobs of the runs whose build
    // job names it.
    R"sql(
CREATE TABLE builds (
  id           INTEGER PRIMARY KEY,
  key          TEXT NOT NULL UNIQUE,
  state        TEXT NOT NULL CHECK (state = 'queued' OR state = 'running' OR state = 'ready'
                                    OR state = 'failed' OR state = 'evicted'),
  upstream_sha TEXT NOT NULL,
  backend_sha  TEXT NOT NULL DEFAULT '',
  job_id       INTEGER,              -- the attempt building it now, or the last one
  attempts     INTEGER NOT NULL DEFAULT 0,
  size_bytes   INTEGER,
  reason       TEXT NOT NULL DEFAULT '',
  conclusion   TEXT,                 -- a failed build's class (docs/verdicts.md)
  created_at   TEXT NOT NULL,
  started_at   TEXT,
  finished_at  TEXT,
  last_used_at TEXT
);
CREATE INDEX builds_by_state ON builds (state, last_used_at);
ALTER TABLE jobs ADD COLUMN build_key TEXT;
CREATE INDEX jobs_by_build_key ON jobs (build_key) WHERE build_key IS NOT NULL;
)sql",
    // 19: trunk health (docs/dashboard.md). The trunk grid reads a ref's newest push and
    // scheduled runs through an index of only those, in id order (runs_by_ref is by finish
    // time and holds every PR run of the base branch too); a test's history reads its newest
    // results through (name, job_id); the flaky list reads the newest flaky results through an
    // index of only those (few: a flaky result is a rerun that passed).
    R"sql(
CREATE INDEX runs_trunk ON runs (ref, id) WHERE event = 'push' OR event = 'schedule';
CREATE INDEX test_results_by_name ON test_results (name, job_id);
CREATE INDEX test_results_flaky ON test_results (job_id) WHERE outcome = 'flaky';
)sql",
    // 20: daily roll-ups for the trends (docs/dashboard.md, "Trends"), kept by triggers in the
    // same commit as the state change that ends a run or a job, so that a page of 30 days reads
    // a few hundred rows at any size of history. A run or job is counted once, on the UTC day
    // it ended, when it leaves an open state. daily_jobs: per day, tier, slot ('' without one)
    // and class, the attempts, their time on the slot (started to finished) and their wait for
    // it (created to started, for attempts that started on a slot); daily_waits: those waits
    // counted in buckets (store::k_wait_bounds_ms) for the percentiles. Replaced by 22, which
    // fills them (20's fill ran in a transaction of its own, after this one's commit).
    R"sql(
CREATE TABLE daily_runs (
  day        TEXT NOT NULL,
  event      TEXT NOT NULL,
  conclusion TEXT NOT NULL,
  runs       INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (day, event, conclusion)
) WITHOUT ROWID;
CREATE TABLE daily_jobs (
  day        TEXT NOT NULL,
  tier       TEXT NOT NULL,
  slot       TEXT NOT NULL,
  conclusion TEXT NOT NULL,
  position   INTEGER NOT NULL,
  jobs       INTEGER NOT NULL DEFAULT 0,
  busy_ms    INTEGER NOT NULL DEFAULT 0,
  waited     INTEGER NOT NULL DEFAULT 0,
  wait_ms    INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (day, tier, slot, conclusion)
) WITHOUT ROWID;
CREATE TABLE daily_waits (
  day    TEXT NOT NULL,
  bucket INTEGER NOT NULL,
  n      INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (day, bucket)
) WITHOUT ROWID;
CREATE TRIGGER daily_runs_end AFTER UPDATE OF state ON runs
WHEN (NEW.state = 'completed' OR NEW.state = 'cancelled') AND (OLD.state = 'queued' OR OLD.state = 'running')
BEGIN
  INSERT INTO daily_runs (day, event, conclusion, runs)
  VALUES (substr(coalesce(NEW.finished_at, strftime('%Y-%m-%dT%H:%M:%fZ')), 1, 10), NEW.event,
          coalesce(NEW.conclusion, NEW.state), 1)
  ON CONFLICT (day, event, conclusion) DO UPDATE SET runs = runs + 1;
END;
CREATE TRIGGER daily_jobs_end AFTER UPDATE OF state ON jobs
WHEN (NEW.state = 'completed' OR NEW.state = 'cancelled')
 AND (OLD.state = 'queued' OR OLD.state = 'leased' OR OLD.state = 'running')
BEGIN
  INSERT INTO daily_jobs (day, tier, slot, conclusion, position, jobs, busy_ms, waited, wait_ms)
  VALUES (substr(coalesce(NEW.finished_at, strftime('%Y-%m-%dT%H:%M:%fZ')), 1, 10), NEW.tier,
          coalesce(NEW.slot, ''), coalesce(NEW.conclusion, NEW.state), NEW.position, 1,
          CASE WHEN NEW.started_at IS NULL OR NEW.finished_at IS NULL THEN 0 ELSE
            max(0, coalesce(CAST(round((julianday(NEW.finished_at) - julianday(NEW.started_at)) * 86400000) AS INTEGER), 0)) END,
          NEW.started_at IS NOT NULL AND NEW.slot IS NOT NULL,
          CASE WHEN NEW.started_at IS NULL OR NEW.slot IS NULL THEN 0 ELSE
            max(0, coalesce(CAST(round((julianday(NEW.started_at) - julianday(NEW.created_at)) * 86400000) AS INTEGER), 0)) END)
  ON CONFLICT (day, tier, slot, conclusion) DO UPDATE SET jobs = jobs + 1,
    busy_ms = busy_ms + excluded.busy_ms, waited = waited + excluded.waited,
    wait_ms = wait_ms + excluded.wait_ms, position = min(position, excluded.position);
  INSERT INTO daily_waits (day, bucket, n)
  SELECT substr(coalesce(NEW.finished_at, strftime('%Y-%m-%dT%H:%M:%fZ')), 1, 10),
         (w >= 500) + (w >= 1000) + (w >= 2000) + (w >= 5000) + (w >= 10000) + (w >= 20000) +
         (w >= 30000) + (w >= 60000) + (w >= 120000) + (w >= 300000) + (w >= 600000) +
         (w >= 1200000) + (w >= 1800000) + (w >= 3600000) + (w >= 7200000) + (w >= 14400000) +
         (w >= 28800000), 1
    FROM (SELECT coalesce(CAST(round((julianday(NEW.started_at) - julianday(NEW.created_at)) * 86400000) AS INTEGER), 0) AS w)
   WHERE NEW.started_at IS NOT NULL AND NEW.slot IS NOT NULL
  ON CONFLICT (day, bucket) DO UPDATE SET n = n + 1;
END;
)sql",
    // 21: the start-up's counts (store::read_event_totals, docs/operations.md "Metrics") read
    // in index order: without these, each GROUP BY sorted the whole table in memory
    // (temp_store=MEMORY), 140 MiB for the jobs of a million runs, which the daemon's heap then
    // kept.
    R"sql(
CREATE INDEX jobs_ended ON jobs (tier, conclusion, state) WHERE state IN ('completed','cancelled');
CREATE INDEX runs_ended ON runs (event, conclusion, state) WHERE state IN ('completed','cancelled');
CREATE INDEX outbox_done ON outbox (sink, delivery) WHERE delivery <> 'waiting';
)sql",
    // 22: the trends' roll-ups again (docs/dashboard.md, "Trends"; issue 34's review), each
    // defined once by a view that both its trigger (for the row that changed) and
    // store::rebuild_daily() (for the whole history) read:
    // - daily_runs: per day a run ended, event and class, the runs (as 20, by daily_run_ends);
    // - daily_tiers: per day a run completed (cancelled runs left out), event, run class, tier
    //   and the class of the tier's last attempt, the runs and every attempt's time on a slot;
    // - daily_busy: per day, slot and tier, the time attempts ran, split at UTC midnights;
    // - daily_waits: per day a wait ended, tier and bucket (store::k_wait_bounds_ms), the
    //   attempts that waited and their waits: from when the attempt could start (the later of
    //   its creation and the end of the run's earlier positions, as JobsRepo::waiting_since) to
    //   its start, or to its end for one that gave up (device_unavailable without starting).
    // Filled from the history in this migration's transaction.
    R"sql(
DROP TRIGGER daily_runs_end;
DROP TRIGGER daily_jobs_end;
DROP TABLE daily_jobs;
DROP TABLE daily_waits;
CREATE TABLE daily_tiers (
  day        TEXT NOT NULL,
  event      TEXT NOT NULL,
  run_class  TEXT NOT NULL,
  tier       TEXT NOT NULL,
  conclusion TEXT NOT NULL,
  position   INTEGER NOT NULL,
  runs       INTEGER NOT NULL DEFAULT 0,
  busy_ms    INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (day, event, run_class, tier, conclusion)
) WITHOUT ROWID;
CREATE TABLE daily_busy (
  day      TEXT NOT NULL,
  slot     TEXT NOT NULL,
  tier     TEXT NOT NULL,
  position INTEGER NOT NULL,
  busy_ms  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (day, slot, tier)
) WITHOUT ROWID;
CREATE TABLE daily_waits (
  day      TEXT NOT NULL,
  tier     TEXT NOT NULL,
  bucket   INTEGER NOT NULL,
  position INTEGER NOT NULL,
  n        INTEGER NOT NULL DEFAULT 0,
  wait_ms  INTEGER NOT NULL DEFAULT 0,
  PRIMARY KEY (day, tier, bucket)
) WITHOUT ROWID;
-- 0 .. 999: the days an attempt's running time spans, counted from the day it started (an
-- attempt that ran for more than 1,000 days counts its first 1,000).
CREATE TABLE day_offsets (n INTEGER PRIMARY KEY);
WITH RECURSIVE k(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM k WHERE n < 999)
INSERT INTO day_offsets (n) SELECT n FROM k;

CREATE VIEW daily_run_ends AS
SELECT id, substr(coalesce(finished_at, created_at), 1, 10) AS day, event,
       coalesce(conclusion, state) AS conclusion
  FROM runs WHERE state = 'completed' OR state = 'cancelled';

CREATE VIEW daily_tier_ends AS
SELECT r.id AS run_id, substr(coalesce(r.finished_at, r.created_at), 1, 10) AS day, r.event,
       coalesce(r.conclusion, r.state) AS run_class, j.tier, j.position,
       (SELECT coalesce(l.conclusion, l.state) FROM jobs l
         WHERE l.run_id = r.id AND l.position = j.position
           AND l.attempt = (SELECT max(k.attempt) FROM jobs k
                             WHERE k.run_id = r.id AND k.position = j.position)) AS conclusion,
       sum(CASE WHEN j.slot IS NULL OR j.started_at IS NULL OR j.finished_at IS NULL THEN 0 ELSE
             max(0, coalesce(CAST(round((julianday(j.finished_at) - julianday(j.started_at))
                                        * 86400000) AS INTEGER), 0)) END) AS busy_ms
  FROM runs r JOIN jobs j ON j.run_id = r.id
 WHERE r.state = 'completed'
 GROUP BY r.id, j.position;

CREATE VIEW daily_busy_spans AS
SELECT j.id, date(j.started_at, '+' || o.n || ' days') AS day, j.slot, j.tier, j.position,
       max(0, coalesce(CAST(round((min(julianday(j.finished_at),
                                       julianday(j.started_at, 'start of day', '+' || (o.n + 1) || ' days'))
                                   - max(julianday(j.started_at),
                                         julianday(j.started_at, 'start of day', '+' || o.n || ' days')))
                                  * 86400000) AS INTEGER), 0)) AS busy_ms
  FROM jobs j JOIN day_offsets o
    ON o.n <= julianday(date(j.finished_at)) - julianday(date(j.started_at))
 WHERE (j.state = 'completed' OR j.state = 'cancelled') AND j.slot IS NOT NULL
   AND j.started_at IS NOT NULL AND j.finished_at IS NOT NULL;

-- The wait buckets' upper bounds (exclusive), store::k_wait_bounds_ms: a wait's bucket is the
-- number of bounds at or below it.
CREATE TABLE wait_bounds (bucket INTEGER PRIMARY KEY, bound_ms INTEGER NOT NULL UNIQUE);
INSERT INTO wait_bounds (bucket, bound_ms) VALUES (0, 500), (1, 1000), (2, 2000), (3, 5000),
  (4, 10000), (5, 20000), (6, 30000), (7, 60000), (8, 120000), (9, 300000), (10, 600000),
  (11, 1200000), (12, 1800000), (13, 3600000), (14, 7200000), (15, 14400000), (16, 28800000);

CREATE VIEW daily_wait_ends AS
SELECT id, day, tier, position, w, (SELECT count(*) FROM wait_bounds b WHERE b.bound_ms <= w) AS bucket
  FROM (SELECT j.id, date(coalesce(j.started_at, j.finished_at)) AS day, j.tier, j.position,
               max(0, coalesce(CAST(round((julianday(coalesce(j.started_at, j.finished_at)) -
                 max(julianday(j.created_at),
                     coalesce((SELECT max(julianday(p.finished_at)) FROM jobs p
                                WHERE p.run_id = j.run_id AND p.position < j.position),
                              julianday(j.created_at)))) * 86400000) AS INTEGER), 0)) AS w
          FROM jobs j
         WHERE (j.state = 'completed' OR j.state = 'cancelled')
           AND ((j.started_at IS NOT NULL AND j.slot IS NOT NULL)
                OR (j.started_at IS NULL AND j.conclusion = 'device_unavailable')));

CREATE TRIGGER daily_runs_end AFTER UPDATE OF state ON runs
WHEN (NEW.state = 'completed' OR NEW.state = 'cancelled') AND (OLD.state = 'queued' OR OLD.state = 'running')
BEGIN
  INSERT INTO daily_runs (day, event, conclusion, runs)
  SELECT day, event, conclusion, 1 FROM daily_run_ends WHERE id = NEW.id
  ON CONFLICT (day, event, conclusion) DO UPDATE SET runs = runs + 1;
  INSERT INTO daily_tiers (day, event, run_class, tier, conclusion, position, runs, busy_ms)
  SELECT day, event, run_class, tier, conclusion, position, 1, busy_ms
    FROM daily_tier_ends WHERE run_id = NEW.id
  ON CONFLICT (day, event, run_class, tier, conclusion) DO UPDATE SET runs = runs + 1,
    busy_ms = busy_ms + excluded.busy_ms, position = min(position, excluded.position);
END;
CREATE TRIGGER daily_jobs_end AFTER UPDATE OF state ON jobs
WHEN (NEW.state = 'completed' OR NEW.state = 'cancelled')
 AND (OLD.state = 'queued' OR OLD.state = 'leased' OR OLD.state = 'running')
BEGIN
  INSERT INTO daily_busy (day, slot, tier, position, busy_ms)
  SELECT day, slot, tier, position, busy_ms FROM daily_busy_spans WHERE id = NEW.id
  ON CONFLICT (day, slot, tier) DO UPDATE SET busy_ms = busy_ms + excluded.busy_ms,
    position = min(position, excluded.position);
  INSERT INTO daily_waits (day, tier, bucket, position, n, wait_ms)
  SELECT day, tier, bucket, position, 1, w FROM daily_wait_ends WHERE id = NEW.id
  ON CONFLICT (day, tier, bucket) DO UPDATE SET n = n + 1, wait_ms = wait_ms + excluded.wait_ms,
    position = min(position, excluded.position);
END;
)sql",
    // 23: the flaky list's roll-up (docs/dashboard.md, "Flaky tests"; issue 34's review). For
    // each test that ever had a flaky result, its newest attempt's result in each of its last
    // ~100 (run, tier) pairs, base checks left out: what a test's history shows, kept by
    // triggers in the commit that records the results and clustered by test, so the flaky list
    // ranks 100 tests from a few pages instead of 20,000 scattered results and jobs. A result
    // is inserted, or marked flaky after a rerun passed (JobsRepo::mark_flaky); a test's first
    // flaky result brings its earlier results in; this migration brings in those of every test
    // with a flaky result so far.
    R"sql(
CREATE TABLE test_flaky_runs (
  name    TEXT NOT NULL,
  run_id  INTEGER NOT NULL,
  tier    TEXT NOT NULL,
  job_id  INTEGER NOT NULL,   -- the newest attempt of the tier in the run with a result of it
  outcome TEXT NOT NULL,      -- its result there
  PRIMARY KEY (name, run_id, tier)
) WITHOUT ROWID;
CREATE TRIGGER test_flaky_runs_first BEFORE INSERT ON test_results
WHEN NEW.outcome = 'flaky' AND NOT EXISTS (SELECT 1 FROM test_flaky_runs WHERE name = NEW.name)
BEGIN
  INSERT INTO test_flaky_runs (name, run_id, tier, job_id, outcome)
  SELECT NEW.name, j.run_id, j.tier, t.job_id, t.outcome FROM (SELECT job_id, outcome FROM
    test_results WHERE name = NEW.name ORDER BY job_id DESC LIMIT 400) t
    CROSS JOIN jobs j ON j.id = t.job_id WHERE j.base_check IS NULL
  ON CONFLICT (name, run_id, tier) DO UPDATE SET job_id = excluded.job_id,
    outcome = excluded.outcome WHERE excluded.job_id > test_flaky_runs.job_id;
END;
CREATE TRIGGER test_flaky_runs_add AFTER INSERT ON test_results
WHEN NEW.outcome = 'flaky' OR EXISTS (SELECT 1 FROM test_flaky_runs WHERE name = NEW.name)
BEGIN
  INSERT INTO test_flaky_runs (name, run_id, tier, job_id, outcome)
  SELECT NEW.name, j.run_id, j.tier, NEW.job_id, NEW.outcome FROM jobs j
    WHERE j.id = NEW.job_id AND j.base_check IS NULL
  ON CONFLICT (name, run_id, tier) DO UPDATE SET job_id = excluded.job_id,
    outcome = excluded.outcome WHERE excluded.job_id >= test_flaky_runs.job_id;
  DELETE FROM test_flaky_runs WHERE name = NEW.name AND job_id < (SELECT job_id FROM
    test_flaky_runs WHERE name = NEW.name ORDER BY job_id DESC LIMIT 1 OFFSET 99);
END;
CREATE TRIGGER test_flaky_runs_first_marked BEFORE UPDATE OF outcome ON test_results
WHEN NEW.outcome = 'flaky' AND NOT EXISTS (SELECT 1 FROM test_flaky_runs WHERE name = NEW.name)
BEGIN
  INSERT INTO test_flaky_runs (name, run_id, tier, job_id, outcome)
  SELECT NEW.name, j.run_id, j.tier, t.job_id, t.outcome FROM (SELECT job_id, outcome FROM
    test_results WHERE name = NEW.name ORDER BY job_id DESC LIMIT 400) t
    CROSS JOIN jobs j ON j.id = t.job_id WHERE j.base_check IS NULL
  ON CONFLICT (name, run_id, tier) DO UPDATE SET job_id = excluded.job_id,
    outcome = excluded.outcome WHERE excluded.job_id > test_flaky_runs.job_id;
END;
CREATE TRIGGER test_flaky_runs_marked AFTER UPDATE OF outcome ON test_results
WHEN NEW.outcome = 'flaky' OR EXISTS (SELECT 1 FROM test_flaky_runs WHERE name = NEW.name)
BEGIN
  INSERT INTO test_flaky_runs (name, run_id, tier, job_id, outcome)
  SELECT NEW.name, j.run_id, j.tier, NEW.job_id, NEW.outcome FROM jobs j
    WHERE j.id = NEW.job_id AND j.base_check IS NULL
  ON CONFLICT (name, run_id, tier) DO UPDATE SET job_id = excluded.job_id,
    outcome = excluded.outcome WHERE excluded.job_id >= test_flaky_runs.job_id;
END;
INSERT INTO test_flaky_runs (name, run_id, tier, job_id, outcome)
SELECT f.name, j.run_id, j.tier, t.job_id, t.outcome
  FROM (SELECT DISTINCT name FROM test_results WHERE outcome = 'flaky') f
  CROSS JOIN test_results t ON t.name = f.name AND t.job_id >= coalesce((SELECT job_id FROM
    test_results WHERE name = f.name ORDER BY job_id DESC LIMIT 1 OFFSET 399), 0)
  CROSS JOIN jobs j ON j.id = t.job_id WHERE j.base_check IS NULL
ON CONFLICT (name, run_id, tier) DO UPDATE SET job_id = excluded.job_id,
  outcome = excluded.outcome WHERE excluded.job_id > test_flaky_runs.job_id;
DELETE FROM test_flaky_runs AS x WHERE job_id < (SELECT job_id FROM test_flaky_runs
  WHERE name = x.name ORDER BY job_id DESC LIMIT 1 OFFSET 99);
)sql",
};

/// The migration after which rebuild_daily() fills the roll-ups, in its transaction: the
/// version that gave them their shape (20's are dropped by 22 unfilled).
constexpr int k_daily_fill = 22;

int current_version(Db& db) {
    auto& st = db.cached("PRAGMA user_version");
    st.step();
    int v = static_cast<int>(st.int64(0));
    st.reset();
    return v;
}

}  // namespace

int schema_version() {
    return static_cast<int>(k_migrations.size());
}

Status migrate(Db& db) {
    return migrate(db, schema_version());
}

Status migrate(Db& db, int to) {
    try {
        int v = current_version(db);
        if (v > schema_version()) {
            return make_error(Errc::storage_version, "database schema version " +
                                                         std::to_string(v) +
                                                         " is newer than this crcrd (" +
                                                         std::to_string(schema_version()) + ")");
        }
        for (; v < std::min(to, schema_version()); ++v) {
            Transaction tx(db);
            const std::string_view sql = k_migrations[static_cast<std::size_t>(v)];
            db.exec(sql);
            if (sql.find("writable_schema") != std::string_view::npos) {
                // A schema rewritten in place changes no version by itself: another
                // connection opened before (one that may write: a read-only one has no
                // CHECKs) would go on with the old text.
                auto& sv = db.cached("PRAGMA schema_version");
                sv.step();
                const auto next = sv.int64(0) + 1;
                sv.reset();
                db.exec("PRAGMA schema_version = " + std::to_string(next));
                db.exec("PRAGMA writable_schema = RESET");  // and this one takes the new version
            }
            std::int64_t counted = 0;
            if (v + 1 == k_daily_fill) {
                // The trends' roll-ups start with the history there is, in the same
                // transaction: a crash leaves neither the version nor empty roll-ups.
                counted = rebuild_daily(db);
            }
            db.exec("PRAGMA user_version = " + std::to_string(v + 1));
            tx.commit();
            if (counted > 0)
                spdlog::info("storage: daily roll-ups made from {} groups of runs and jobs",
                             counted);
            if (v + 1 == 13) {
                // 13's replace() changes nothing in a table whose text differs from the one
                // released (a development build's): said, not silently left slow.
                auto& left = db.cached(
                    "SELECT name FROM sqlite_schema WHERE type = 'table' AND sql LIKE '% IN "
                    "(''%'',''%'',''%'')%'");
                while (left.step())
                    spdlog::warn(
                        "storage: table {} still checks a list of values with IN (schema 13 did "
                        "not "
                        "recognise its text); it works, more slowly",
                        left.text(0));
                left.reset();
            }
        }
    } catch (const SqlError& e) {
        return make_error(e.kind(), std::string("migration failed: ") + e.what());
    }
    return Ok{};
}

}  // namespace crcrd::store
