-- SQLite: the statements of the claim/lease engine that the ORM cannot express.
-- SQLite has no row locks and one writer at a time: every write transaction here is
-- BEGIN IMMEDIATE (the settings' transaction_mode), which takes the write lock up front, so
-- a claim's read and write cannot interleave with another claim. RETURNING needs 3.35.
-- ORDER BY/LIMIT directly on UPDATE needs a compile-time option many builds lack, hence the
-- IN subquery.

-- name: claimable_levels
-- The priority levels that have a claimable job right now: one index probe per level.
SELECT lv.level FROM (
    SELECT 0 AS level UNION ALL SELECT 1 UNION ALL SELECT 2 UNION ALL SELECT 3 UNION ALL SELECT 4
) AS lv
WHERE EXISTS (
    SELECT 1 FROM queues_job j
    WHERE j.queue_name = %(queue)s AND j.status = 'Pending' AND j.priority = lv.level
      AND j.scheduled_at <= %(now)s
      AND j.dependency_status IN ('none', 'satisfied')
      AND (j.cron_schedule IS NULL OR j.recurring)
)

-- name: claim_batch
-- One statement per batch, inside the IMMEDIATE transaction that serialises writers.
-- `claimed_by` names the claiming worker process; the columns it sets from its
-- parameters are stamped by the store, not returned (see postgresql.sql).
UPDATE queues_job
SET status = 'Running', attempts = attempts + 1, started_at = %(now)s,
    last_heartbeat_at = %(now)s, lease_expires_at = %(lease_expires_at)s,
    run_token = %(token)s, claimed_by = %(claimed_by)s
WHERE id IN (
    SELECT id FROM queues_job
    WHERE queue_name = %(queue)s AND status = 'Pending' AND scheduled_at <= %(now)s
      AND dependency_status IN ('none', 'satisfied')
      AND (cron_schedule IS NULL OR recurring)
      AND NOT EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = %(queue)s)
    ORDER BY priority DESC, task_priority DESC, scheduled_at, id
    LIMIT %(limit)s
)
RETURNING
    id, queue_name, payload, priority, attempts, max_attempts, created_at, scheduled_at,
    completed_at, failed_at, timed_out_at, error_message, timeout, retry_strategy, result,
    cron_schedule, timezone, next_run_at, recurring, batch_id, workflow_id, depends_on,
    dependency_status, unique_key, unique_scope, unique_slot, schedule_name,
    schedule_removed_at, tags, meta, task_priority, trace_context

-- name: claim_batch_at_level
-- claim_batch restricted to one priority level (weighted claims fill a batch level by level).
UPDATE queues_job
SET status = 'Running', attempts = attempts + 1, started_at = %(now)s,
    last_heartbeat_at = %(now)s, lease_expires_at = %(lease_expires_at)s,
    run_token = %(token)s, claimed_by = %(claimed_by)s
WHERE id IN (
    SELECT id FROM queues_job
    WHERE queue_name = %(queue)s AND status = 'Pending' AND priority = %(priority)s
      AND scheduled_at <= %(now)s
      AND dependency_status IN ('none', 'satisfied')
      AND (cron_schedule IS NULL OR recurring)
      AND NOT EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = %(queue)s)
    ORDER BY task_priority DESC, scheduled_at, id
    LIMIT %(limit)s
)
RETURNING
    id, queue_name, payload, priority, attempts, max_attempts, created_at, scheduled_at,
    completed_at, failed_at, timed_out_at, error_message, timeout, retry_strategy, result,
    cron_schedule, timezone, next_run_at, recurring, batch_id, workflow_id, depends_on,
    dependency_status, unique_key, unique_scope, unique_slot, schedule_name,
    schedule_removed_at, tags, meta, task_priority, trace_context

-- name: mark_claimed
-- Nothing: claim_batch marks the rows it picks in the same statement.

-- name: lock_queue_limit
-- A limited queue's claim begins here (queues/engine/limits.py): the queue's config row (its
-- limit and its rate's bucket). The IMMEDIATE
-- transaction of the claim is the lock (one writer at a time).
SELECT queue_name, max_running, rate_limit, rate_period, rate_tokens, rate_refilled_at,
  updated_at, updated_by
FROM queues_queueconfig WHERE queue_name = %(queue)s

-- name: count_running
-- The queue's Running jobs (claimed, started or not; a lease that expired counts until the
-- reaper takes the job back): a range of the (queue_name, status, created_at) index.
SELECT COUNT(*) FROM queues_job WHERE queue_name = %(queue)s AND status = 'Running'

-- name: lock_expired_leases
-- Running jobs whose lease expired (the IMMEDIATE transaction is the lock).
SELECT id, run_token FROM queues_job
WHERE status = 'Running' AND lease_expires_at < %(now)s
  AND (%(queue)s IS NULL OR queue_name = %(queue)s)
ORDER BY lease_expires_at
LIMIT %(limit)s

-- name: complete_runs
-- The completions of a write (of jobs with no schedule), of any claims, each with its own
-- result, in one statement: `runs` is a JSON array of [id, token, result] triples, the
-- result as the text the column stores (JSON null: SQL NULL, no result). RETURNING names the
-- rows still their run's and whether each has dependents to release. `+status` keeps the planner on the
-- primary key: compared bare (and without ANALYZE's statistics, as in most databases),
-- `status = 'Running'` picks the Running (lease) index and reads every Running row of every
-- queue, each statement (a batch-50 worker fell from ~4,350 to ~640 jobs/s beside 20,000
-- Running jobs of other queues). The same in lock_runs and start_runs.
UPDATE queues_job
SET status = 'Completed', completed_at = %(now)s, result = r.result, run_token = NULL,
    lease_expires_at = NULL
FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS token,
             json_extract(value, '$[2]') AS result
      FROM json_each(%(runs)s)) AS r
WHERE queues_job.id = r.id AND +status = 'Running' AND run_token = r.token
RETURNING id, EXISTS (SELECT 1 FROM queues_jobdependency d WHERE d.parent_id = queues_job.id)

-- name: complete_free_runs
-- The plain completions of a worker's write, of every claim at once, in autocommit (as
-- PostgreSQL's): `runs` a JSON array of [id, token, result] triples, each row fenced by its
-- own token, a job with dependents left for the caller's transaction. RETURNING names the
-- rows written. The start checks that PostgreSQL reads in the same statement are
-- startable_runs here, right after it (a read in the same process costs no round trip).
UPDATE queues_job
SET status = 'Completed', completed_at = %(now)s, result = r.result, run_token = NULL,
    lease_expires_at = NULL
FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS token,
             json_extract(value, '$[2]') AS result
      FROM json_each(%(runs)s)) AS r
WHERE queues_job.id = r.id AND +status = 'Running' AND run_token = r.token
  AND NOT EXISTS (SELECT 1 FROM queues_jobdependency d WHERE d.parent_id = queues_job.id)
RETURNING id, NULL

-- name: lock_runs
-- The runs of one claim still this run's, and whether each has dependents: the fence of the
-- outcomes written row by row after it. The engine's IMMEDIATE transaction holds the
-- database's write lock, so no other writer changes them until it ends.
SELECT id, EXISTS (SELECT 1 FROM queues_jobdependency d WHERE d.parent_id = queues_job.id)
FROM queues_job
WHERE id IN (SELECT value FROM json_each(%(ids)s)) AND +status = 'Running'
  AND run_token = %(token)s

-- name: start_runs
-- The start marker of held jobs of one claim, fenced; RETURNING names the runs still ours,
-- and for each whether its queue is paused and whether its fail-fast batch has failed.
UPDATE queues_job SET started_at = %(now)s, last_heartbeat_at = %(now)s
WHERE id IN (SELECT value FROM json_each(%(ids)s)) AND +status = 'Running'
  AND run_token = %(token)s
RETURNING id,
    EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = queues_job.queue_name),
    EXISTS (SELECT 1 FROM queues_batch b WHERE b.id = queues_job.batch_id
            AND b.failure_mode = 'FailFast' AND b.status = 'Failed')

-- name: startable_runs
-- The run token of each held job asked about that may start without a start marker: it is
-- Running (the caller compares the token), its queue not paused and its fail-fast batch, if
-- any, not failed, as start_runs tells (a plain read: no lock, no commit). `+status` keeps
-- the planner on the primary key, as in complete_runs.
SELECT id, run_token FROM queues_job
WHERE id IN (SELECT value FROM json_each(%(ids)s)) AND +status = 'Running'
  AND NOT EXISTS (
      SELECT 1 FROM queues_queuepause p WHERE p.queue_name = queues_job.queue_name)
  AND NOT EXISTS (
      SELECT 1 FROM queues_batch b WHERE b.id = queues_job.batch_id
      AND b.failure_mode = 'FailFast' AND b.status = 'Failed')

-- name: install_job_counts
-- Exact job counts per queue and status, kept by row triggers in the same transaction as
-- every change of a job's status. SQLite has one writer at a time, so one shard is enough.
CREATE TRIGGER queues_job_count_insert AFTER INSERT ON queues_job BEGIN
    INSERT INTO queues_jobcount (queue_name, status, shard, n)
    VALUES (NEW.queue_name, NEW.status, 0, 1)
    ON CONFLICT (queue_name, status, shard) DO UPDATE SET n = n + 1;
END
-- statement
CREATE TRIGGER queues_job_count_delete AFTER DELETE ON queues_job BEGIN
    INSERT INTO queues_jobcount (queue_name, status, shard, n)
    VALUES (OLD.queue_name, OLD.status, 0, -1)
    ON CONFLICT (queue_name, status, shard) DO UPDATE SET n = n - 1;
END
-- statement
CREATE TRIGGER queues_job_count_update AFTER UPDATE OF status, queue_name ON queues_job
WHEN OLD.status IS NOT NEW.status OR OLD.queue_name IS NOT NEW.queue_name BEGIN
    INSERT INTO queues_jobcount (queue_name, status, shard, n)
    VALUES (OLD.queue_name, OLD.status, 0, -1)
    ON CONFLICT (queue_name, status, shard) DO UPDATE SET n = n - 1;
    INSERT INTO queues_jobcount (queue_name, status, shard, n)
    VALUES (NEW.queue_name, NEW.status, 0, 1)
    ON CONFLICT (queue_name, status, shard) DO UPDATE SET n = n + 1;
END

-- name: drop_job_counts
DROP TRIGGER IF EXISTS queues_job_count_insert
-- statement
DROP TRIGGER IF EXISTS queues_job_count_update
-- statement
DROP TRIGGER IF EXISTS queues_job_count_delete

-- name: recount_jobs
-- Rebuild the counts from the jobs table; writers must be stopped (as during a migration).
DELETE FROM queues_jobcount
-- statement
INSERT INTO queues_jobcount (queue_name, status, shard, n)
SELECT queue_name, status, 0, COUNT(*) FROM queues_job GROUP BY queue_name, status

-- name: install_completion_counts
-- Completions per queue and minute (UTC), kept by row triggers in the same transaction as the
-- write (the semantics are in postgresql.sql: a write that gives completed_at a new value,
-- counted in its minute, never taken back). One writer at a time: one shard. Django stores
-- UTC datetimes as text ('2026-11-29 21:05:07.123456'), so the minute is its first 16
-- characters plus ':00', the very text Django writes for that minute. `UPDATE OF
-- completed_at` keeps the trigger off the statements that do not set it (claims, heartbeats).
CREATE TRIGGER queues_job_completions_insert AFTER INSERT ON queues_job
WHEN NEW.completed_at IS NOT NULL BEGIN
    INSERT INTO queues_completioncount (queue_name, minute, shard, n)
    VALUES (NEW.queue_name, substr(NEW.completed_at, 1, 16) || ':00', 0, 1)
    ON CONFLICT (queue_name, minute, shard) DO UPDATE SET n = n + 1;
END
-- statement
CREATE TRIGGER queues_job_completions_update AFTER UPDATE OF completed_at ON queues_job
WHEN NEW.completed_at IS NOT NULL AND NEW.completed_at IS NOT OLD.completed_at BEGIN
    INSERT INTO queues_completioncount (queue_name, minute, shard, n)
    VALUES (NEW.queue_name, substr(NEW.completed_at, 1, 16) || ':00', 0, 1)
    ON CONFLICT (queue_name, minute, shard) DO UPDATE SET n = n + 1;
END

-- name: drop_completion_counts
DROP TRIGGER IF EXISTS queues_job_completions_insert
-- statement
DROP TRIGGER IF EXISTS queues_job_completions_update

-- name: recount_completions
-- Rebuild the completion counts from the jobs table, from `since` (the start of a minute) on:
-- each row's last completion. Writers must be stopped (as during a migration).
DELETE FROM queues_completioncount
-- statement
INSERT INTO queues_completioncount (queue_name, minute, shard, n)
SELECT queue_name, substr(completed_at, 1, 16) || ':00', 0, COUNT(*) FROM queues_job
WHERE completed_at >= %(since)s
GROUP BY 1, 2

-- name: install_attempt_counts
-- Failed attempts per queue, minute (UTC) and status after the attempt, kept by a row
-- trigger on the error history's inserts in the same transaction as the write (the
-- semantics are in postgresql.sql; which statuses are failures or retries is the reader's
-- rule, queues/store/counters/rollup.py). One writer at a time: one shard. The minute as the completion
-- counts' (the text Django writes). The SELECT's WHERE also settles SQLite's upsert parsing
-- ambiguity of INSERT ... SELECT ... ON CONFLICT.
CREATE TRIGGER queues_failedattempt_count AFTER INSERT ON queues_failedattempt BEGIN
    INSERT INTO queues_attemptcount (queue_name, minute, status, shard, n)
    SELECT queue_name, substr(NEW.failed_at, 1, 16) || ':00', NEW.status, 0, 1
    FROM queues_job WHERE id = NEW.job_id
    ON CONFLICT (queue_name, minute, status, shard) DO UPDATE SET n = n + 1;
END

-- name: drop_attempt_counts
DROP TRIGGER IF EXISTS queues_failedattempt_count

-- name: recount_attempts
-- Rebuild the attempt counts from the error history, from `since` (the start of a minute)
-- on. Writers must be stopped (as during a migration).
DELETE FROM queues_attemptcount
-- statement
INSERT INTO queues_attemptcount (queue_name, minute, status, shard, n)
SELECT j.queue_name, substr(a.failed_at, 1, 16) || ':00', a.status, 0, COUNT(*)
FROM queues_failedattempt a JOIN queues_job j ON j.id = a.job_id
WHERE a.failed_at >= %(since)s
GROUP BY 1, 2, 3

-- name: install_job_notify
-- Nothing to install: this database has no LISTEN/NOTIFY, so the live-dashboard aggregator
-- (queues.dashboard.live.aggregator) reads at most once a second while a dashboard is connected.

-- name: drop_job_notify
-- Nothing installed (see install_job_notify).

-- name: next_due
-- When the worker of an idle queue should look again (workers/pickup): the earliest
-- scheduled_at of a job that is claimable or will be by time alone (Pending, no unfinished
-- dependency, not a disabled recurring job); no row's value when the queue is paused. One
-- probe of the job_due index per claimable dependency state, which orders each by
-- scheduled_at, never a scan of the queue's future jobs. Reads only: no lock, no write.
SELECT MIN(d.due) FROM (
    SELECT (
        SELECT j.scheduled_at FROM queues_job j
        WHERE j.queue_name = %(queue)s AND j.status = 'Pending'
          AND j.dependency_status = ds.state
          AND (j.cron_schedule IS NULL OR j.recurring)
        ORDER BY j.scheduled_at LIMIT 1
    ) AS due
    FROM (SELECT 'none' AS state UNION ALL SELECT 'satisfied') AS ds
) AS d
WHERE NOT EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = %(queue)s)

-- name: data_version
-- A number that changes when another connection commits to the database file, read
-- without touching a table (SQLite's PRAGMA data_version): an idle worker reads it every
-- few milliseconds and asks next_due only after a change.
PRAGMA data_version

-- name: install_pickup_notify
-- Nothing to install: no LISTEN/NOTIFY here; idle workers watch data_version / next_due
-- (workers/runtime/pickup.py).

-- name: drop_pickup_notify
-- Nothing installed (see install_pickup_notify).

-- name: insert_jobs
-- New jobs, many in one statement: `rows` is one JSON array of rows, each the values of the
-- job's columns in the model's order (SqlStore.job_rows; a test holds this list to the
-- model), adapted by each field as Django's bulk_create adapts them: the same text,
-- numbers and NULLs that Django writes (a JSON column's JSON text as a string). One
-- parameter instead of 36 a row bound by Django.
INSERT INTO queues_job (
    id, queue_name, payload, status, priority, attempts, max_attempts, created_at, scheduled_at,
    started_at, completed_at, failed_at, timed_out_at, error_message, timeout, retry_strategy,
    result, cron_schedule, timezone, next_run_at, recurring, batch_id, workflow_id, depends_on,
    dependency_status, run_token, lease_expires_at, last_heartbeat_at, claimed_by, unique_key,
    unique_scope, unique_slot, schedule_name, schedule_removed_at, tags, meta, task_priority,
    trace_context
)
SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
    json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]'),
    json_extract(value, '$[6]'), json_extract(value, '$[7]'), json_extract(value, '$[8]'),
    json_extract(value, '$[9]'), json_extract(value, '$[10]'), json_extract(value, '$[11]'),
    json_extract(value, '$[12]'), json_extract(value, '$[13]'), json_extract(value, '$[14]'),
    json_extract(value, '$[15]'), json_extract(value, '$[16]'), json_extract(value, '$[17]'),
    json_extract(value, '$[18]'), json_extract(value, '$[19]'), json_extract(value, '$[20]'),
    json_extract(value, '$[21]'), json_extract(value, '$[22]'), json_extract(value, '$[23]'),
    json_extract(value, '$[24]'), json_extract(value, '$[25]'), json_extract(value, '$[26]'),
    json_extract(value, '$[27]'), json_extract(value, '$[28]'), json_extract(value, '$[29]'),
    json_extract(value, '$[30]'), json_extract(value, '$[31]'), json_extract(value, '$[32]'),
    json_extract(value, '$[33]'), json_extract(value, '$[34]'), json_extract(value, '$[35]'),
    json_extract(value, '$[36]'), json_extract(value, '$[37]')
FROM json_each(%(rows)s)

-- name: delete_archived_jobs
-- The jobs of one archive batch leave the table (queues/store/sql/archive.py), one statement
-- a table: any archive row of theirs (a job restored and archived again), their history,
-- tags and edges both ways, then the rows, whose delete triggers take them off the counts.
DELETE FROM queues_archivedjob WHERE id IN (SELECT value FROM json_each(%(ids)s))
-- statement
DELETE FROM queues_failedattempt WHERE job_id IN (SELECT value FROM json_each(%(ids)s))
-- statement
DELETE FROM queues_jobtag WHERE job_id IN (SELECT value FROM json_each(%(ids)s))
-- statement
DELETE FROM queues_jobdependency
WHERE job_id IN (SELECT value FROM json_each(%(ids)s))
   OR parent_id IN (SELECT value FROM json_each(%(ids)s))
-- statement
DELETE FROM queues_job WHERE id IN (SELECT value FROM json_each(%(ids)s))

-- name: insert_archived
-- One archive row; the store sends a batch's rows with executemany (one prepared statement,
-- run for each row by the driver).
INSERT INTO queues_archivedjob (
    id, queue_name, status, priority, attempts, created_at, finished_at, archived_at,
    batch_id, workflow_id, unique_key, tags, failures, data
) VALUES (
    %(id)s, %(queue_name)s, %(status)s, %(priority)s, %(attempts)s, %(created_at)s,
    %(finished_at)s, %(archived_at)s, %(batch_id)s, %(workflow_id)s, %(unique_key)s,
    %(tags)s, %(failures)s, %(data)s
)

-- name: vacuum_jobs
-- Nothing: SQLite reuses the freed pages, and VACUUM would rewrite the whole database file.
