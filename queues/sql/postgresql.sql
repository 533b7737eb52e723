-- PostgreSQL: the statements of the claim/lease engine that the ORM cannot express.
-- Timestamps are parameters (`now`), so a test can move the clock instead of sleeping.

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
WITH picked AS (
    SELECT id FROM queues_job
    WHERE queue_name = %(queue)s AND status = 'Pending' AND scheduled_at <= %(now)s
      AND dependency_status IN ('none', 'satisfied')
      AND (cron_schedule IS NULL OR recurring)
      AND NOT EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = %(queue)s)
    ORDER BY priority DESC, scheduled_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE queues_job AS j
SET status = 'Running', attempts = j.attempts + 1, started_at = %(now)s,
    last_heartbeat_at = %(now)s, lease_expires_at = %(lease_expires_at)s,
    run_token = %(token)s
FROM picked WHERE j.id = picked.id
RETURNING j.*

-- name: claim_batch_at_level
-- claim_batch restricted to one priority level (weighted claims fill a batch level by level).
WITH picked AS (
    SELECT id FROM queues_job
    WHERE queue_name = %(queue)s AND status = 'Pending' AND priority = %(priority)s
      AND scheduled_at <= %(now)s
      AND dependency_status IN ('none', 'satisfied')
      AND (cron_schedule IS NULL OR recurring)
      AND NOT EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = %(queue)s)
    ORDER BY scheduled_at, id
    LIMIT %(limit)s
    FOR UPDATE SKIP LOCKED
)
UPDATE queues_job AS j
SET status = 'Running', attempts = j.attempts + 1, started_at = %(now)s,
    last_heartbeat_at = %(now)s, lease_expires_at = %(lease_expires_at)s,
    run_token = %(token)s
FROM picked WHERE j.id = picked.id
RETURNING j.*

-- name: lock_expired_leases
-- Running jobs whose lease expired, locked for the reaper. SKIP LOCKED lets several reapers
-- run at once: a row a finishing worker or another reaper holds is left to them.
SELECT id, run_token FROM queues_job
WHERE status = 'Running' AND lease_expires_at < %(now)s
  AND (%(queue)s::text IS NULL OR queue_name = %(queue)s)
ORDER BY lease_expires_at
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED
