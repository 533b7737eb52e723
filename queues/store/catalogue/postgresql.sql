-- PostgreSQL: the statements of the claim/lease engine that the ORM cannot express.
-- Timestamps are parameters (`now`), so a test can move the clock instead of sleeping.
-- A list of ids is one parameter, '{id,...}', matched as `j.id = ANY(ARRAY(SELECT
-- unnest(ids::uuid[])))`: psycopg prepares these statements, and with the array bare
-- (`ANY(ids::uuid[])`) each execution's custom plan, which knows the array's length,
-- looked cheaper than the generic plan, which assumes ten elements, so PostgreSQL planned
-- every execution anew (0 generic plans in 6,020: a start check's read cost 123-133 µs of
-- server CPU). Behind the subquery no plan knows the length: the generic plan is kept
-- (37-43 µs), the same plan, a bitmap scan of the primary key at any table size.

-- name: claimable_levels
-- The priority levels that have a claimable job right now: one index probe per level
-- (no scan of the whole queue), for the weighted pick between levels.
SELECT lv.level FROM (VALUES (0), (1), (2), (3), (4)) AS lv(level)
WHERE EXISTS (
    SELECT 1 FROM queues_job j
    WHERE j.queue_name = %(queue)s AND j.status = 'Pending' AND j.priority = lv.level
      AND j.scheduled_at <= %(now)s
      AND j.dependency_status IN ('none', 'satisfied')
      AND (j.cron_schedule IS NULL OR j.recurring)
)

-- name: claim_batch
-- One statement per batch. The CTE locks up to `limit` claimable rows in claim order and
-- skips rows another claimer holds (SKIP LOCKED), so concurrent claimers never wait for
-- or double-claim a row; PostgreSQL re-checks the WHERE clause on the newest row version
-- before locking it. Pause, dependencies, disabled recurring jobs and scheduled_at are all
-- checked here, inside the claim. `status` is a literal so the partial index applies.
-- `claimed_by` names the worker process that claims (NULL if the caller names none), so that
-- its supervisor can hand its jobs back at once if it dies.
-- It returns every column but the six it sets from its parameters: the store stamps
-- those (`SqlRuns.claim`), so that no row sends them back to be converted again.
WITH picked AS (
    SELECT id FROM queues_job
    WHERE queue_name = %(queue)s AND status = 'Pending' AND scheduled_at <= %(now)s
      AND dependency_status IN ('none', 'satisfied')
      AND (cron_schedule IS NULL OR recurring)
      AND NOT EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = %(queue)s)
    ORDER BY priority DESC, task_priority DESC, scheduled_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE queues_job AS j
SET status = 'Running', attempts = j.attempts + 1, started_at = %(now)s,
    last_heartbeat_at = %(now)s, lease_expires_at = %(lease_expires_at)s,
    run_token = %(token)s, claimed_by = %(claimed_by)s
WHERE j.id = ANY(ARRAY(SELECT id FROM picked))
RETURNING
    j.id, j.queue_name, j.payload, j.priority, j.attempts, j.max_attempts, j.created_at,
    j.scheduled_at, j.completed_at, j.failed_at, j.timed_out_at, j.error_message,
    j.timeout, j.retry_strategy, j.result, j.cron_schedule, j.timezone, j.next_run_at,
    j.recurring, j.batch_id, j.workflow_id, j.depends_on, j.dependency_status,
    j.unique_key, j.unique_scope, j.unique_slot, j.schedule_name, j.schedule_removed_at,
    j.tags, j.meta, j.task_priority, j.trace_context

-- name: claim_batch_at_level
-- claim_batch restricted to one priority level (weighted claims fill a batch level by level).
WITH picked AS (
    SELECT id FROM queues_job
    WHERE queue_name = %(queue)s AND status = 'Pending' AND priority = %(priority)s
      AND scheduled_at <= %(now)s
      AND dependency_status IN ('none', 'satisfied')
      AND (cron_schedule IS NULL OR recurring)
      AND NOT EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = %(queue)s)
    ORDER BY task_priority DESC, scheduled_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE queues_job AS j
SET status = 'Running', attempts = j.attempts + 1, started_at = %(now)s,
    last_heartbeat_at = %(now)s, lease_expires_at = %(lease_expires_at)s,
    run_token = %(token)s, claimed_by = %(claimed_by)s
WHERE j.id = ANY(ARRAY(SELECT id FROM picked))
RETURNING
    j.id, j.queue_name, j.payload, j.priority, j.attempts, j.max_attempts, j.created_at,
    j.scheduled_at, j.completed_at, j.failed_at, j.timed_out_at, j.error_message,
    j.timeout, j.retry_strategy, j.result, j.cron_schedule, j.timezone, j.next_run_at,
    j.recurring, j.batch_id, j.workflow_id, j.depends_on, j.dependency_status,
    j.unique_key, j.unique_scope, j.unique_slot, j.schedule_name, j.schedule_removed_at,
    j.tags, j.meta, j.task_priority, j.trace_context

-- name: mark_claimed
-- Nothing: claim_batch marks the rows it locks in the same statement.

-- name: lock_queue_limit
-- A limited queue's claim begins here (queues/engine/limits.py): the queue's config row (its
-- limit and its rate's bucket), locked
-- until the claim commits, so the limited claims of one queue take turns. The count of its
-- Running jobs is the next statement, not a subquery of this one: under READ COMMITTED a
-- statement's snapshot is taken when it starts, before this lock's wait, and would miss the
-- claim that held the lock.
SELECT queue_name, max_running, rate_limit, rate_period, rate_tokens, rate_refilled_at,
  updated_at, updated_by
FROM queues_queueconfig WHERE queue_name = %(queue)s FOR UPDATE

-- name: count_running
-- The queue's Running jobs (claimed, started or not; a lease that expired counts until the
-- reaper takes the job back): a range of the (queue_name, status, created_at) index.
SELECT COUNT(*) FROM queues_job WHERE queue_name = %(queue)s AND status = 'Running'

-- name: lock_expired_leases
-- Running jobs whose lease expired, locked for the reaper. SKIP LOCKED lets several reapers
-- run at once: a row a finishing worker or another reaper holds is left to them.
SELECT id, run_token FROM queues_job
WHERE status = 'Running' AND lease_expires_at < %(now)s
  AND (%(queue)s::text IS NULL OR queue_name = %(queue)s)
ORDER BY lease_expires_at
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED

-- name: complete_runs
-- The completions of a write (of jobs with no schedule), of any claims, each with its own
-- result, in one statement: `runs` is a JSON array of [id, token, result] triples, the
-- result as the JSON text the column stores (JSON null: SQL NULL, no result), one string
-- because psycopg dumps an array of Jsonb element by element in Python. The fence (id,
-- Running, its run's token)
-- decides which rows are still this run's, the row locks the UPDATE takes hold off a
-- concurrent reaper (it skips locked rows) and make a concurrent fenced write wait and then
-- miss. RETURNING names the rows written and whether each has dependents to release, so a
-- batch of completions costs no second read. `status || ''` keeps the planner on the primary
-- key: compared bare, `status = 'Running'` lets it AND the ids with a scan of the Running
-- (lease) index, which holds an entry for every Running row version not yet vacuumed,
-- thousands on a busy table. `ids` (the same ids as an array, read once: an InitPlan) lets
-- it find the rows by the primary key: joined to the JSON's rows alone, which it takes for
-- 100, it scans the whole table while the table has a few thousand rows, a millisecond a
-- statement whatever its size.
UPDATE queues_job AS j
SET status = 'Completed', completed_at = %(now)s, result = r.result, run_token = NULL,
    lease_expires_at = NULL
FROM (SELECT (p ->> 0)::uuid AS id, (p ->> 1)::uuid AS token, (p ->> 2)::jsonb AS result
      FROM jsonb_array_elements(%(runs)s::jsonb) AS p) AS r
WHERE j.id = ANY(ARRAY(SELECT unnest(%(ids)s::uuid[]))) AND j.id = r.id
  AND j.status || '' = 'Running' AND j.run_token = r.token
RETURNING j.id, EXISTS (SELECT 1 FROM queues_jobdependency d WHERE d.parent_id = j.id)

-- name: complete_free_runs
-- A worker's usual write, one statement in autocommit: the plain completions of every
-- claim at once, and the start checks of the held jobs its slots go on to. `runs` is a JSON
-- array of [id, token, result] triples (the result as the JSON text the column stores; JSON
-- null: no result) and `ids` their ids (see complete_runs), each row fenced by its own run's
-- token as in complete_runs. A job with dependents is left alone: releasing them must commit
-- with its completion, so the caller writes it in a transaction. The rows written come back
-- with a NULL token; then the held jobs of `check` that may start (as startable_runs tells),
-- with their run's token. The statement's snapshot is taken after every slot asked: no read
-- began before its ask.
WITH done AS (
    UPDATE queues_job AS j
    SET status = 'Completed', completed_at = %(now)s, result = r.result, run_token = NULL,
        lease_expires_at = NULL
    FROM (SELECT (p ->> 0)::uuid AS id, (p ->> 1)::uuid AS token, (p ->> 2)::jsonb AS result
          FROM jsonb_array_elements(%(runs)s::jsonb) AS p) AS r
    WHERE j.id = ANY(ARRAY(SELECT unnest(%(ids)s::uuid[]))) AND j.id = r.id
      AND j.status || '' = 'Running' AND j.run_token = r.token
      AND NOT EXISTS (SELECT 1 FROM queues_jobdependency d WHERE d.parent_id = j.id)
    RETURNING j.id
)
SELECT id, NULL::uuid FROM done
UNION ALL
SELECT j.id, j.run_token FROM queues_job AS j
WHERE j.id = ANY(ARRAY(SELECT unnest(%(check)s::uuid[]))) AND j.status || '' = 'Running'
  AND NOT EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = j.queue_name)
  AND NOT EXISTS (SELECT 1 FROM queues_batch b WHERE b.id = j.batch_id
                  AND b.failure_mode = 'FailFast' AND b.status = 'Failed')

-- name: lock_runs
-- The runs of one claim still this run's, locked until the transaction ends, and whether
-- each has dependents: the fence of the outcomes written row by row in one statement after
-- it (results, retries, failures: `update_each`), which need no fence of their own while
-- these locks hold. On the primary key only, as complete_runs.
SELECT j.id, EXISTS (SELECT 1 FROM queues_jobdependency d WHERE d.parent_id = j.id)
FROM queues_job AS j
WHERE j.id = ANY(ARRAY(SELECT unnest(%(ids)s::uuid[]))) AND j.status || '' = 'Running'
  AND j.run_token = %(token)s
FOR UPDATE

-- name: start_runs
-- The start marker of held jobs of one claim (the worker's slots took them): the actual
-- start time, fenced like every write of a run, on the primary key only (see
-- complete_runs). RETURNING names the runs still this run's, and for each whether its queue
-- is paused and whether its fail-fast batch has failed (then it must not run): the common
-- case costs this one statement.
UPDATE queues_job AS j
SET started_at = %(now)s, last_heartbeat_at = %(now)s
WHERE j.id = ANY(ARRAY(SELECT unnest(%(ids)s::uuid[]))) AND j.status || '' = 'Running'
  AND j.run_token = %(token)s
RETURNING j.id,
    EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = j.queue_name),
    EXISTS (SELECT 1 FROM queues_batch b WHERE b.id = j.batch_id
            AND b.failure_mode = 'FailFast' AND b.status = 'Failed')

-- name: startable_runs
-- The run token of each held job asked about that may start without a start marker: it is
-- Running (the caller compares the token), its queue not paused and its fail-fast batch, if
-- any, not failed (as start_runs tells). A read, no lock and no commit: the slots that go on
-- to their next held jobs right after handing in outcomes ask it together (see
-- workers/runtime/start_checks.py). On the primary key only, as complete_runs.
SELECT j.id, j.run_token FROM queues_job AS j
WHERE j.id = ANY(ARRAY(SELECT unnest(%(ids)s::uuid[]))) AND j.status || '' = 'Running'
  AND NOT EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = j.queue_name)
  AND NOT EXISTS (SELECT 1 FROM queues_batch b WHERE b.id = j.batch_id
                  AND b.failure_mode = 'FailFast' AND b.status = 'Failed')

-- name: install_job_counts
-- Exact job counts per queue and status, kept by triggers in the same transaction as every
-- change of a job's status (whoever makes it: the engine, the admin, plain SQL). Statement
-- triggers with transition tables write one aggregated row per (queue, status) per
-- statement, not one per job. Each connection adds to its own shard (its backend pid mod 16),
-- so concurrent transactions never wait for each other's counter rows; readers sum shards.
-- Counter rows are written in (queue, status) order to keep lock order fixed.
CREATE OR REPLACE FUNCTION queues_count_jobs() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO queues_jobcount AS c (queue_name, status, shard, n)
        SELECT queue_name, status, mod(pg_backend_pid(), 16), count(*) FROM new_rows
        GROUP BY queue_name, status ORDER BY queue_name, status
        ON CONFLICT (queue_name, status, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    ELSIF TG_OP = 'DELETE' THEN
        INSERT INTO queues_jobcount AS c (queue_name, status, shard, n)
        SELECT queue_name, status, mod(pg_backend_pid(), 16), -count(*) FROM old_rows
        GROUP BY queue_name, status ORDER BY queue_name, status
        ON CONFLICT (queue_name, status, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    ELSE
        INSERT INTO queues_jobcount AS c (queue_name, status, shard, n)
        SELECT queue_name, status, mod(pg_backend_pid(), 16), sum(d) FROM (
            SELECT queue_name, status, 1 AS d FROM new_rows
            UNION ALL
            SELECT queue_name, status, -1 AS d FROM old_rows
        ) AS moved
        GROUP BY queue_name, status HAVING sum(d) <> 0 ORDER BY queue_name, status
        ON CONFLICT (queue_name, status, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END
$body$
-- statement
CREATE TRIGGER queues_job_count_insert AFTER INSERT ON queues_job
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION queues_count_jobs()
-- statement
CREATE TRIGGER queues_job_count_update AFTER UPDATE ON queues_job
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION queues_count_jobs()
-- statement
CREATE TRIGGER queues_job_count_delete AFTER DELETE ON queues_job
REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION queues_count_jobs()

-- name: drop_job_counts
DROP TRIGGER IF EXISTS queues_job_count_insert ON queues_job
-- statement
DROP TRIGGER IF EXISTS queues_job_count_update ON queues_job
-- statement
DROP TRIGGER IF EXISTS queues_job_count_delete ON queues_job
-- statement
DROP FUNCTION IF EXISTS queues_count_jobs()

-- name: recount_jobs
-- Rebuild the counts from the jobs table; writers must be stopped (as during a migration).
DELETE FROM queues_jobcount
-- statement
INSERT INTO queues_jobcount (queue_name, status, shard, n)
SELECT queue_name, status, 0, COUNT(*) FROM queues_job GROUP BY queue_name, status

-- name: install_completion_counts
-- Completions per queue and minute (UTC), kept by triggers in the same transaction as the
-- write, for the dashboard's throughput. A completion is a write that gives `completed_at` a
-- value the row did not have: a job that completes (and a recurring job, whose row goes back
-- to Pending with its new completed_at), or a row inserted already completed. It is counted
-- in the minute of that completed_at and never taken back: deleting a job, or sending it
-- back to Pending, does not undo a completion that happened. Statement triggers as for the
-- job counts: one aggregated upsert per statement, in this connection's shard (backend pid
-- mod 16) so that concurrent transactions do not wait for each other's rows, rows in (queue,
-- minute) order. PostgreSQL fires the triggers of an event in name order, so every statement
-- writes these rows before the job counts' (`completions` < `count`): one lock order across
-- both tables. An UPDATE pairs new and old rows by id; in a statement that completes nothing
-- (a claim, a heartbeat) no new row has a completed_at, or it has the old one. date_trunc's
-- third argument truncates in UTC whatever the session's time zone.
CREATE OR REPLACE FUNCTION queues_count_completions() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    IF TG_OP = 'INSERT' THEN
        INSERT INTO queues_completioncount AS c (queue_name, minute, shard, n)
        SELECT queue_name, date_trunc('minute', completed_at, 'UTC'), mod(pg_backend_pid(), 16),
               count(*)
        FROM new_rows WHERE completed_at IS NOT NULL
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (queue_name, minute, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    ELSE
        INSERT INTO queues_completioncount AS c (queue_name, minute, shard, n)
        SELECT nr.queue_name, date_trunc('minute', nr.completed_at, 'UTC'),
               mod(pg_backend_pid(), 16), count(*)
        FROM new_rows nr
        WHERE nr.completed_at IS NOT NULL
          AND NOT EXISTS (
              SELECT 1 FROM old_rows o
              WHERE o.id = nr.id AND o.completed_at IS NOT DISTINCT FROM nr.completed_at
          )
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (queue_name, minute, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    END IF;
    RETURN NULL;
END
$body$
-- statement
CREATE TRIGGER queues_job_completions_insert AFTER INSERT ON queues_job
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION queues_count_completions()
-- statement
CREATE TRIGGER queues_job_completions_update AFTER UPDATE ON queues_job
REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
FOR EACH STATEMENT EXECUTE FUNCTION queues_count_completions()

-- name: drop_completion_counts
DROP TRIGGER IF EXISTS queues_job_completions_insert ON queues_job
-- statement
DROP TRIGGER IF EXISTS queues_job_completions_update ON queues_job
-- statement
DROP FUNCTION IF EXISTS queues_count_completions()

-- name: recount_completions
-- Rebuild the completion counts from the jobs table, from `since` (the start of a minute) on:
-- each row's last completion (earlier runs of a recurring job are not in the table). Writers
-- must be stopped (as during a migration).
DELETE FROM queues_completioncount
-- statement
INSERT INTO queues_completioncount (queue_name, minute, shard, n)
SELECT queue_name, date_trunc('minute', completed_at, 'UTC'), 0, COUNT(*) FROM queues_job
WHERE completed_at >= %(since)s
GROUP BY 1, 2

-- name: install_attempt_counts
-- Failed attempts per queue, minute (UTC) and status after the attempt, for the history's
-- failures and retries (queues/store/counters/attempt_counts.py): kept by a trigger on the error history's
-- inserts, in the same transaction as the write that ends the attempt, whoever writes the
-- row (a worker's failure, the reaper, an operator). The status is counted as it is: which
-- statuses make a failure or a retry is decided by the reader (queues/store/counters/rollup.py), not
-- here. One aggregated upsert per statement (the engine inserts a write's rows at once),
-- the queue read from the job by primary key, in this connection's shard (backend pid mod
-- 16) so that concurrent transactions do not wait for each other's rows, rows in a fixed
-- order. The engine inserts these rows after the write of the jobs: their counter rows
-- come after the job counts' in every transaction. Never taken back: deleting a job or
-- pruning the history leaves what happened counted.
CREATE OR REPLACE FUNCTION queues_count_attempts() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    INSERT INTO queues_attemptcount AS c (queue_name, minute, status, shard, n)
    SELECT j.queue_name, date_trunc('minute', a.failed_at, 'UTC'), a.status,
           mod(pg_backend_pid(), 16), count(*)
    FROM attempt_new_rows a JOIN queues_job j ON j.id = a.job_id
    GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (queue_name, minute, status, shard) DO UPDATE SET n = c.n + EXCLUDED.n;
    RETURN NULL;
END
$body$
-- statement
CREATE TRIGGER queues_failedattempt_count AFTER INSERT ON queues_failedattempt
REFERENCING NEW TABLE AS attempt_new_rows
FOR EACH STATEMENT EXECUTE FUNCTION queues_count_attempts()

-- name: drop_attempt_counts
DROP TRIGGER IF EXISTS queues_failedattempt_count ON queues_failedattempt
-- statement
DROP FUNCTION IF EXISTS queues_count_attempts()

-- name: recount_attempts
-- Rebuild the attempt counts from the error history, from `since` (the start of a minute)
-- on; the rows of deleted jobs are gone with them. Writers must be stopped (as during a
-- migration).
DELETE FROM queues_attemptcount
-- statement
INSERT INTO queues_attemptcount (queue_name, minute, status, shard, n)
SELECT j.queue_name, date_trunc('minute', a.failed_at, 'UTC'), a.status, 0, COUNT(*)
FROM queues_failedattempt a JOIN queues_job j ON j.id = a.job_id
WHERE a.failed_at >= %(since)s
GROUP BY 1, 2, 3

-- name: install_job_notify
-- Wakes each web process's live-dashboard aggregator (queues.store.listen) after a change the
-- overview shows: a statement trigger, so one NOTIFY per statement, not per row. NOTIFY is
-- delivered only at COMMIT (a rolled-back change wakes nobody) and PostgreSQL folds identical
-- notifications of one transaction into one. Heartbeats (UPDATEs that leave `status` alone)
-- do not fire it. It is a hint only: the aggregator also reads on a timer.
CREATE OR REPLACE FUNCTION queues_notify_jobs() RETURNS trigger LANGUAGE plpgsql AS $body$
BEGIN
    PERFORM pg_notify('hammerweb_jobs', '');
    RETURN NULL;
END
$body$
-- statement
CREATE TRIGGER queues_job_notify
AFTER INSERT OR UPDATE OF status OR DELETE OR TRUNCATE ON queues_job
FOR EACH STATEMENT EXECUTE FUNCTION queues_notify_jobs()
-- statement
CREATE TRIGGER queues_queuepause_notify
AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON queues_queuepause
FOR EACH STATEMENT EXECUTE FUNCTION queues_notify_jobs()

-- name: drop_job_notify
DROP TRIGGER IF EXISTS queues_job_notify ON queues_job
-- statement
DROP TRIGGER IF EXISTS queues_queuepause_notify ON queues_queuepause
-- statement
DROP FUNCTION IF EXISTS queues_notify_jobs()

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
    FROM (VALUES ('none'), ('satisfied')) AS ds(state)
) AS d
WHERE NOT EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = %(queue)s)

-- name: data_version
-- Nothing to read: this database has no cheap per-connection change counter (see
-- sqlite.sql); an idle worker asks next_due itself (MariaDB) or is woken by NOTIFY.

-- name: install_pickup_notify
-- Wakes idle workers (workers/pickup) when a job may have become claimable in a queue: a
-- NOTIFY on channel hammerweb_pickup whose payload is the queue's name, sent at COMMIT (a
-- rolled-back enqueue wakes nobody; inside a caller's transaction, at its commit). Inserts:
-- one statement trigger reads the inserted rows once (a bulk enqueue calls pg_notify once per
-- queue, not per row). Updates: a row trigger whose WHEN is checked without calling the
-- function, so heartbeats, starts and completions cost nothing; it fires when a row becomes
-- Pending (retry, release, requeue by the reaper, cancel undone) or a Pending row's
-- dependency, schedule or recurrence changes (a released dependent, a job moved to now). A
-- resumed queue (its pause row deleted) wakes its workers too. PostgreSQL folds identical
-- notifications of one transaction into one.
CREATE OR REPLACE FUNCTION queues_pickup_notify_inserted() RETURNS trigger LANGUAGE plpgsql
AS $body$
BEGIN
    PERFORM pg_notify('hammerweb_pickup', q.queue_name)
    FROM (SELECT DISTINCT queue_name FROM pickup_new_rows WHERE status = 'Pending') AS q;
    RETURN NULL;
END
$body$
-- statement
CREATE OR REPLACE FUNCTION queues_pickup_notify_row() RETURNS trigger LANGUAGE plpgsql
AS $body$
BEGIN
    IF TG_OP = 'DELETE' THEN
        PERFORM pg_notify('hammerweb_pickup', OLD.queue_name);
    ELSE
        PERFORM pg_notify('hammerweb_pickup', NEW.queue_name);
    END IF;
    RETURN NULL;
END
$body$
-- statement
CREATE TRIGGER queues_job_pickup_insert
AFTER INSERT ON queues_job REFERENCING NEW TABLE AS pickup_new_rows
FOR EACH STATEMENT EXECUTE FUNCTION queues_pickup_notify_inserted()
-- statement
CREATE TRIGGER queues_job_pickup_update
AFTER UPDATE ON queues_job FOR EACH ROW
WHEN (NEW.status = 'Pending' AND (
    OLD.status <> 'Pending'
    OR OLD.dependency_status IS DISTINCT FROM NEW.dependency_status
    OR OLD.scheduled_at IS DISTINCT FROM NEW.scheduled_at
    OR OLD.recurring IS DISTINCT FROM NEW.recurring
    OR OLD.queue_name IS DISTINCT FROM NEW.queue_name
))
EXECUTE FUNCTION queues_pickup_notify_row()
-- statement
CREATE TRIGGER queues_queuepause_pickup
AFTER DELETE ON queues_queuepause FOR EACH ROW EXECUTE FUNCTION queues_pickup_notify_row()

-- name: drop_pickup_notify
DROP TRIGGER IF EXISTS queues_job_pickup_insert ON queues_job
-- statement
DROP TRIGGER IF EXISTS queues_job_pickup_update ON queues_job
-- statement
DROP TRIGGER IF EXISTS queues_queuepause_pickup ON queues_queuepause
-- statement
DROP FUNCTION IF EXISTS queues_pickup_notify_inserted()
-- statement
DROP FUNCTION IF EXISTS queues_pickup_notify_row()

-- name: insert_jobs
-- New jobs, many in one statement: `rows` is one JSON array of rows, each the values of the
-- job's columns in the model's order (SqlStore.job_rows; a test holds this list to the
-- model), adapted by each field as Django's bulk_create adapts them, as text. One string
-- parameter: Django's bulk_create bound 36 parameters a row, each adapted in Python on the
-- client (0.65 s for 5,000 jobs, most of an enqueue_many). A duration comes as the text
-- psycopg sends, a boolean as 0 or 1, a JSON column as the JSON text Django writes. jsonb,
-- not json: `->>` on json parses the row's text again for every column (0.33 to 0.49 s of
-- the server's CPU for 5,000 jobs, against 0.14 to 0.17 s).
INSERT INTO queues_job (
    id, queue_name, payload, status, priority, attempts, max_attempts, created_at, scheduled_at,
    started_at, completed_at, failed_at, timed_out_at, error_message, timeout, retry_strategy,
    result, cron_schedule, timezone, next_run_at, recurring, batch_id, workflow_id, depends_on,
    dependency_status, run_token, lease_expires_at, last_heartbeat_at, claimed_by, unique_key,
    unique_scope, unique_slot, schedule_name, schedule_removed_at, tags, meta, task_priority,
    trace_context
)
SELECT (r->>0)::uuid, r->>1, (r->>2)::jsonb, r->>3, (r->>4)::smallint, (r->>5)::integer,
    (r->>6)::integer, (r->>7)::timestamptz, (r->>8)::timestamptz, (r->>9)::timestamptz,
    (r->>10)::timestamptz, (r->>11)::timestamptz, (r->>12)::timestamptz, r->>13,
    (r->>14)::interval, (r->>15)::jsonb, (r->>16)::jsonb, r->>17,
    r->>18, (r->>19)::timestamptz, (r->>20)::integer::boolean, (r->>21)::uuid, (r->>22)::uuid,
    (r->>23)::jsonb, r->>24, (r->>25)::uuid, (r->>26)::timestamptz, (r->>27)::timestamptz,
    (r->>28)::uuid, r->>29, (r->>30)::jsonb, r->>31, r->>32, (r->>33)::timestamptz,
    (r->>34)::jsonb, (r->>35)::jsonb, (r->>36)::smallint, (r->>37)::jsonb
FROM jsonb_array_elements(%(rows)s::jsonb) AS r

-- name: delete_archived_jobs
-- The jobs of one archive batch leave the table (queues/store/sql/archive.py), one statement
-- a table: any archive row of theirs (a job restored and archived again), their history,
-- tags and edges both ways, then the rows, whose statement trigger takes them off the
-- counts. `ids` as in the claim's statements (see the top of this file).
DELETE FROM queues_archivedjob WHERE id = ANY(ARRAY(SELECT unnest(%(ids)s::uuid[])))
-- statement
DELETE FROM queues_failedattempt WHERE job_id = ANY(ARRAY(SELECT unnest(%(ids)s::uuid[])))
-- statement
DELETE FROM queues_jobtag WHERE job_id = ANY(ARRAY(SELECT unnest(%(ids)s::uuid[])))
-- statement
DELETE FROM queues_jobdependency
WHERE job_id = ANY(ARRAY(SELECT unnest(%(ids)s::uuid[])))
   OR parent_id = ANY(ARRAY(SELECT unnest(%(ids)s::uuid[])))
-- statement
DELETE FROM queues_job WHERE id = ANY(ARRAY(SELECT unnest(%(ids)s::uuid[])))

-- name: insert_archived
-- The archive's rows of one batch in one statement: `rows` is a JSON array of rows, each
-- the values of these columns in this order as Django adapts them, the packed `data` as
-- base64. One parameter: 14 a row, each dumped by psycopg in Python, cost more than the
-- rest of the insert.
INSERT INTO queues_archivedjob (
    id, queue_name, status, priority, attempts, created_at, finished_at, archived_at,
    batch_id, workflow_id, unique_key, tags, failures, data
)
SELECT (r->>0)::uuid, r->>1, r->>2, (r->>3)::smallint, (r->>4)::integer,
    (r->>5)::timestamptz, (r->>6)::timestamptz, (r->>7)::timestamptz, (r->>8)::uuid,
    (r->>9)::uuid, r->>10, r->11, (r->>12)::integer, decode(r->>13, 'base64')
FROM jsonb_array_elements(%(rows)s::jsonb) AS r

-- name: vacuum_jobs
-- After an archive run that moved many jobs (queues/ops/archiving.py): the deleted row
-- versions are dead tuples that every scan of the table and its indexes still walks until a
-- VACUUM marks them free. Autovacuum comes in time on a steady trickle; a run of a million
-- rows is worth one at once. Not in a transaction (VACUUM refuses one); ANALYZE refreshes
-- the planner's statistics, which the mass delete made wrong.
VACUUM (ANALYZE) queues_job
