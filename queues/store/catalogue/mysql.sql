-- MySQL / MariaDB: the statements of the claim/lease engine that the ORM cannot express.
-- Neither has UPDATE ... RETURNING (MariaDB 10.11 has it only for INSERT and DELETE) nor LIMIT
-- inside an IN subquery (ERROR 1235), so a claim is this SELECT ... FOR UPDATE SKIP LOCKED
-- followed, in the same READ COMMITTED transaction, by an UPDATE of the locked ids; the
-- engine retries the transaction on a deadlock (1213) or lock wait timeout (1205).
-- InnoDB locks every row it scans for a locking read, so the claim index leads with
-- (queue_name, status, priority) to keep the scan to claimable rows.

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
-- Locks up to `limit` claimable rows in claim order, skipping rows other claimers hold. It
-- reads every column but the six that mark_claimed sets (the store fills those in).
-- The pause subquery takes no lock: a locking clause on the outer SELECT does not lock the
-- rows of a nested subquery.
SELECT
    id, queue_name, payload, priority, attempts, max_attempts, created_at, scheduled_at,
    completed_at, failed_at, timed_out_at, error_message, timeout, retry_strategy, result,
    cron_schedule, timezone, next_run_at, recurring, batch_id, workflow_id, depends_on,
    dependency_status, unique_key, unique_scope, unique_slot, schedule_name,
    schedule_removed_at, tags, meta, task_priority, trace_context
FROM queues_job
WHERE queue_name = %(queue)s AND status = 'Pending' AND scheduled_at <= %(now)s
  AND dependency_status IN ('none', 'satisfied')
  AND (cron_schedule IS NULL OR recurring)
  AND NOT EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = %(queue)s)
ORDER BY priority DESC, task_priority DESC, scheduled_at, id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED

-- name: claim_batch_at_level
-- claim_batch restricted to one priority level (weighted claims fill a batch level by level).
SELECT
    id, queue_name, payload, priority, attempts, max_attempts, created_at, scheduled_at,
    completed_at, failed_at, timed_out_at, error_message, timeout, retry_strategy, result,
    cron_schedule, timezone, next_run_at, recurring, batch_id, workflow_id, depends_on,
    dependency_status, unique_key, unique_scope, unique_slot, schedule_name,
    schedule_removed_at, tags, meta, task_priority, trace_context
FROM queues_job
WHERE queue_name = %(queue)s AND status = 'Pending' AND priority = %(priority)s
  AND scheduled_at <= %(now)s
  AND dependency_status IN ('none', 'satisfied')
  AND (cron_schedule IS NULL OR recurring)
  AND NOT EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = %(queue)s)
ORDER BY task_priority DESC, scheduled_at, id
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED

-- name: mark_claimed
-- The second statement of a claim: marks the rows claim_batch locked (same transaction);
-- `claimed_by` names the claiming worker process (see postgresql.sql).
UPDATE queues_job
SET status = 'Running', attempts = attempts + 1, started_at = %(now)s,
    last_heartbeat_at = %(now)s, lease_expires_at = %(lease_expires_at)s,
    run_token = %(token)s, claimed_by = %(claimed_by)s
WHERE id IN %(ids)s

-- name: lock_queue_limit
-- A limited queue's claim begins here (queues/engine/limits.py): the queue's config row (its
-- limit and its rate's bucket), locked
-- until the claim commits, so the limited claims of one queue take turns. Under READ
-- COMMITTED the count that follows (its own statement) reads what the previous holder
-- committed.
SELECT queue_name, max_running, rate_limit, rate_period, rate_tokens, rate_refilled_at,
  updated_at, updated_by
FROM queues_queueconfig WHERE queue_name = %(queue)s FOR UPDATE

-- name: count_running
-- The queue's Running jobs (claimed, started or not; a lease that expired counts until the
-- reaper takes the job back): a range of the (queue_name, status, created_at) index.
SELECT COUNT(*) FROM queues_job WHERE queue_name = %(queue)s AND status = 'Running'

-- name: lock_expired_leases
-- Running jobs whose lease expired, locked for the reaper; SKIP LOCKED lets reapers overlap.
SELECT id, run_token FROM queues_job
WHERE status = 'Running' AND lease_expires_at < %(now)s
  AND (%(queue)s IS NULL OR queue_name = %(queue)s)
ORDER BY lease_expires_at
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED

-- name: complete_runs
-- The completions of a write (of jobs with no schedule), of any claims, each with its own
-- result: `runs` is a JSON array of [id, token, result] triples, the result as the text the
-- column stores (JSON null: SQL NULL, no result), read as rows by JSON_TABLE. Without
-- UPDATE ... RETURNING, the locking read says which rows are still their run's (and whether
-- each has dependents to release); the UPDATE then writes exactly those rows, since no one
-- else can change them until this transaction ends.
SELECT j.id, EXISTS (SELECT 1 FROM queues_jobdependency d WHERE d.parent_id = j.id)
FROM queues_job j
JOIN JSON_TABLE(%(runs)s, '$[*]' COLUMNS (
    id CHAR(36) PATH '$[0]', token CHAR(36) PATH '$[1]'
)) AS r ON j.id = r.id
WHERE j.id IN %(ids)s AND j.status = 'Running' AND j.run_token = r.token
FOR UPDATE
-- statement
UPDATE queues_job AS j
JOIN JSON_TABLE(%(runs)s, '$[*]' COLUMNS (
    id CHAR(36) PATH '$[0]', token CHAR(36) PATH '$[1]', result LONGTEXT PATH '$[2]'
)) AS r ON j.id = r.id
SET j.status = 'Completed', j.completed_at = %(now)s, j.result = r.result, j.run_token = NULL,
    j.lease_expires_at = NULL
WHERE j.id IN %(ids)s AND j.status = 'Running' AND j.run_token = r.token

-- name: complete_free_runs
-- MariaDB's UPDATE has no RETURNING, so one statement cannot say which rows it wrote: the
-- plain completions go through complete_runs in a transaction (an empty block: the store
-- answers None).

-- name: lock_runs
-- The runs of one claim still this run's, locked until the transaction ends, and whether
-- each has dependents: the fence of the outcomes written row by row after it (see
-- complete_runs' locking read).
SELECT j.id, EXISTS (SELECT 1 FROM queues_jobdependency d WHERE d.parent_id = j.id)
FROM queues_job j
WHERE j.id IN %(ids)s AND j.status = 'Running' AND j.run_token = %(token)s
FOR UPDATE

-- name: start_runs
-- The start marker of held jobs of one claim, fenced; the locking read names the runs still
-- this run's (see complete_runs), and for each whether its queue is paused and whether its
-- fail-fast batch has failed (then it must not run).
SELECT j.id,
    EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = j.queue_name),
    EXISTS (SELECT 1 FROM queues_batch b WHERE b.id = j.batch_id
            AND b.failure_mode = 'FailFast' AND b.status = 'Failed')
FROM queues_job j
WHERE j.id IN %(ids)s AND j.status = 'Running' AND j.run_token = %(token)s
FOR UPDATE
-- statement
UPDATE queues_job SET started_at = %(now)s, last_heartbeat_at = %(now)s
WHERE id IN %(ids)s AND status = 'Running' AND run_token = %(token)s

-- name: startable_runs
-- The run token of each held job asked about that may start without a start marker: it is
-- Running (the caller compares the token), its queue not paused and its fail-fast batch, if
-- any, not failed (as start_runs tells). A plain read: no lock, no commit (see
-- workers/runtime/start_checks.py).
SELECT j.id, j.run_token FROM queues_job j
WHERE j.id IN %(ids)s AND j.status = 'Running'
  AND NOT EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = j.queue_name)
  AND NOT EXISTS (SELECT 1 FROM queues_batch b WHERE b.id = j.batch_id
                  AND b.failure_mode = 'FailFast' AND b.status = 'Failed')

-- name: install_job_counts
-- Exact job counts per queue and status, kept by row triggers in the same transaction as
-- every change of a job's status. Each connection adds to its own shard (its connection id
-- mod 16), so concurrent transactions do not queue up behind one counter row.
CREATE TRIGGER queues_job_count_insert AFTER INSERT ON queues_job FOR EACH ROW
INSERT INTO queues_jobcount (queue_name, status, shard, n)
VALUES (NEW.queue_name, NEW.status, MOD(CONNECTION_ID(), 16), 1)
ON DUPLICATE KEY UPDATE n = n + 1
-- statement
CREATE TRIGGER queues_job_count_delete AFTER DELETE ON queues_job FOR EACH ROW
INSERT INTO queues_jobcount (queue_name, status, shard, n)
VALUES (OLD.queue_name, OLD.status, MOD(CONNECTION_ID(), 16), -1)
ON DUPLICATE KEY UPDATE n = n - 1
-- statement
CREATE TRIGGER queues_job_count_update AFTER UPDATE ON queues_job FOR EACH ROW
BEGIN
    IF NOT (OLD.status <=> NEW.status AND OLD.queue_name <=> NEW.queue_name) THEN
        INSERT INTO queues_jobcount (queue_name, status, shard, n)
        VALUES (OLD.queue_name, OLD.status, MOD(CONNECTION_ID(), 16), -1)
        ON DUPLICATE KEY UPDATE n = n - 1;
        INSERT INTO queues_jobcount (queue_name, status, shard, n)
        VALUES (NEW.queue_name, NEW.status, MOD(CONNECTION_ID(), 16), 1)
        ON DUPLICATE KEY UPDATE n = n + 1;
    END IF;
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
-- counted in its minute, never taken back). Each connection adds to its own shard, as for the
-- job counts. The minute is completed_at less its seconds and microseconds: datetime
-- arithmetic, exact for any value, with no format string. Django stores UTC in these DATETIME
-- columns. A second trigger on the same event is allowed since MySQL 5.7.2 and MariaDB
-- 10.2.3; it fires after the count triggers (created first). The two triggers repeat one
-- INSERT: a trigger has one event, and a procedure called from both would cost a call a row.
CREATE TRIGGER queues_job_completions_insert AFTER INSERT ON queues_job FOR EACH ROW
BEGIN
    IF NEW.completed_at IS NOT NULL THEN
        INSERT INTO queues_completioncount (queue_name, minute, shard, n)
        VALUES (
            NEW.queue_name,
            NEW.completed_at - INTERVAL
                (SECOND(NEW.completed_at) * 1000000 + MICROSECOND(NEW.completed_at)) MICROSECOND,
            MOD(CONNECTION_ID(), 16),
            1
        )
        ON DUPLICATE KEY UPDATE n = n + 1;
    END IF;
END
-- statement
CREATE TRIGGER queues_job_completions_update AFTER UPDATE ON queues_job FOR EACH ROW
BEGIN
    IF NEW.completed_at IS NOT NULL AND NOT (OLD.completed_at <=> NEW.completed_at) THEN
        INSERT INTO queues_completioncount (queue_name, minute, shard, n)
        VALUES (
            NEW.queue_name,
            NEW.completed_at - INTERVAL
                (SECOND(NEW.completed_at) * 1000000 + MICROSECOND(NEW.completed_at)) MICROSECOND,
            MOD(CONNECTION_ID(), 16),
            1
        )
        ON DUPLICATE KEY UPDATE n = n + 1;
    END IF;
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
SELECT queue_name,
       completed_at - INTERVAL
           (SECOND(completed_at) * 1000000 + MICROSECOND(completed_at)) MICROSECOND AS minute,
       0, COUNT(*)
FROM queues_job WHERE completed_at >= %(since)s
GROUP BY 1, 2

-- name: install_attempt_counts
-- Failed attempts per queue, minute (UTC) and status after the attempt, kept by a row
-- trigger on the error history's inserts in the same transaction as the write (the
-- semantics are in postgresql.sql; which statuses are failures or retries is the reader's
-- rule, queues/store/counters/rollup.py). The queue is read from the job by primary key (a row this
-- transaction has just written, so already locked by it); the minute is truncated as the
-- completion counts' is; shard: the connection id mod 16.
CREATE TRIGGER queues_failedattempt_count AFTER INSERT ON queues_failedattempt FOR EACH ROW
BEGIN
    INSERT INTO queues_attemptcount (queue_name, minute, status, shard, n)
    SELECT j.queue_name,
           NEW.failed_at - INTERVAL
               (SECOND(NEW.failed_at) * 1000000 + MICROSECOND(NEW.failed_at)) MICROSECOND,
           NEW.status, MOD(CONNECTION_ID(), 16), 1
    FROM queues_job j WHERE j.id = NEW.job_id
    ON DUPLICATE KEY UPDATE n = queues_attemptcount.n + 1;
END

-- name: drop_attempt_counts
DROP TRIGGER IF EXISTS queues_failedattempt_count

-- name: recount_attempts
-- Rebuild the attempt counts from the error history, from `since` (the start of a minute)
-- on. Writers must be stopped (as during a migration).
DELETE FROM queues_attemptcount
-- statement
INSERT INTO queues_attemptcount (queue_name, minute, status, shard, n)
SELECT j.queue_name,
       a.failed_at - INTERVAL
           (SECOND(a.failed_at) * 1000000 + MICROSECOND(a.failed_at)) MICROSECOND AS minute,
       a.status, 0, COUNT(*)
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
-- Nothing to read: this database has no cheap per-connection change counter (see
-- sqlite.sql); an idle worker asks next_due itself (MariaDB) or is woken by NOTIFY.

-- name: install_pickup_notify
-- Nothing to install: no LISTEN/NOTIFY here; idle workers watch data_version / next_due
-- (workers/runtime/pickup.py).

-- name: drop_pickup_notify
-- Nothing installed (see install_pickup_notify).

-- name: insert_jobs
-- New jobs, many in one statement: `rows` is one JSON array of rows, each the values of the
-- job's columns in the model's order (SqlStore.job_rows; a test holds this list to the
-- model), adapted by each field as Django's bulk_create adapts them, read as rows by
-- JSON_TABLE. One parameter instead of 36 a row, each escaped in Python by the driver (1.1 s
-- for 5,000 jobs). Every column is read as text (JSON null: NULL) and converted by the
-- INSERT itself, as Django's literals were: JSON_TABLE's own conversion of a value that
-- does not fit its column type gives NULL or a truncated value, where the INSERT refuses it.
INSERT INTO queues_job (
    id, queue_name, payload, status, priority, attempts, max_attempts, created_at, scheduled_at,
    started_at, completed_at, failed_at, timed_out_at, error_message, timeout, retry_strategy,
    result, cron_schedule, timezone, next_run_at, recurring, batch_id, workflow_id, depends_on,
    dependency_status, run_token, lease_expires_at, last_heartbeat_at, claimed_by, unique_key,
    unique_scope, unique_slot, schedule_name, schedule_removed_at, tags, meta, task_priority,
    trace_context
)
SELECT r.* FROM JSON_TABLE(%(rows)s, '$[*]' COLUMNS (
    c0 LONGTEXT PATH '$[0]', c1 LONGTEXT PATH '$[1]', c2 LONGTEXT PATH '$[2]',
    c3 LONGTEXT PATH '$[3]', c4 LONGTEXT PATH '$[4]', c5 LONGTEXT PATH '$[5]',
    c6 LONGTEXT PATH '$[6]', c7 LONGTEXT PATH '$[7]', c8 LONGTEXT PATH '$[8]',
    c9 LONGTEXT PATH '$[9]', c10 LONGTEXT PATH '$[10]', c11 LONGTEXT PATH '$[11]',
    c12 LONGTEXT PATH '$[12]', c13 LONGTEXT PATH '$[13]', c14 LONGTEXT PATH '$[14]',
    c15 LONGTEXT PATH '$[15]', c16 LONGTEXT PATH '$[16]', c17 LONGTEXT PATH '$[17]',
    c18 LONGTEXT PATH '$[18]', c19 LONGTEXT PATH '$[19]', c20 LONGTEXT PATH '$[20]',
    c21 LONGTEXT PATH '$[21]', c22 LONGTEXT PATH '$[22]', c23 LONGTEXT PATH '$[23]',
    c24 LONGTEXT PATH '$[24]', c25 LONGTEXT PATH '$[25]', c26 LONGTEXT PATH '$[26]',
    c27 LONGTEXT PATH '$[27]', c28 LONGTEXT PATH '$[28]', c29 LONGTEXT PATH '$[29]',
    c30 LONGTEXT PATH '$[30]', c31 LONGTEXT PATH '$[31]', c32 LONGTEXT PATH '$[32]',
    c33 LONGTEXT PATH '$[33]', c34 LONGTEXT PATH '$[34]', c35 LONGTEXT PATH '$[35]',
    c36 LONGTEXT PATH '$[36]', c37 LONGTEXT PATH '$[37]'
)) AS r

-- name: delete_archived_jobs
-- The jobs of one archive batch leave the table (queues/store/sql/archive.py), one statement
-- a table: any archive row of theirs (a job restored and archived again), their history,
-- tags and edges both ways (before the rows: the foreign keys are checked at once), then the
-- rows, whose delete triggers take them off the counts.
DELETE FROM queues_archivedjob WHERE id IN %(ids)s
-- statement
DELETE FROM queues_failedattempt WHERE job_id IN %(ids)s
-- statement
DELETE FROM queues_jobtag WHERE job_id IN %(ids)s
-- statement
DELETE FROM queues_jobdependency WHERE job_id IN %(ids)s OR parent_id IN %(ids)s
-- statement
DELETE FROM queues_job WHERE id IN %(ids)s

-- name: insert_archived
-- One archive row; the store sends a batch's rows with executemany, which the driver
-- writes as one multi-row INSERT.
INSERT INTO queues_archivedjob (
    id, queue_name, status, priority, attempts, created_at, finished_at, archived_at,
    batch_id, workflow_id, unique_key, tags, failures, data
) VALUES (
    %(id)s, %(queue_name)s, %(status)s, %(priority)s, %(attempts)s, %(created_at)s,
    %(finished_at)s, %(archived_at)s, %(batch_id)s, %(workflow_id)s, %(unique_key)s,
    %(tags)s, %(failures)s, %(data)s
)

-- name: vacuum_jobs
-- Nothing: InnoDB's purge thread frees the deleted rows itself, and OPTIMIZE TABLE would
-- rebuild (and lock) the whole jobs table.
