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
UPDATE queues_job
SET status = 'Running', attempts = attempts + 1, started_at = %(now)s,
    last_heartbeat_at = %(now)s, lease_expires_at = %(lease_expires_at)s,
    run_token = %(token)s
WHERE id IN (
    SELECT id FROM queues_job
    WHERE queue_name = %(queue)s AND status = 'Pending' AND scheduled_at <= %(now)s
      AND dependency_status IN ('none', 'satisfied')
      AND (cron_schedule IS NULL OR recurring)
      AND NOT EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = %(queue)s)
    ORDER BY priority DESC, scheduled_at, id
    LIMIT %(limit)s
)
RETURNING *

-- name: claim_batch_at_level
-- claim_batch restricted to one priority level (weighted claims fill a batch level by level).
UPDATE queues_job
SET status = 'Running', attempts = attempts + 1, started_at = %(now)s,
    last_heartbeat_at = %(now)s, lease_expires_at = %(lease_expires_at)s,
    run_token = %(token)s
WHERE id IN (
    SELECT id FROM queues_job
    WHERE queue_name = %(queue)s AND status = 'Pending' AND priority = %(priority)s
      AND scheduled_at <= %(now)s
      AND dependency_status IN ('none', 'satisfied')
      AND (cron_schedule IS NULL OR recurring)
      AND NOT EXISTS (SELECT 1 FROM queues_queuepause p WHERE p.queue_name = %(queue)s)
    ORDER BY scheduled_at, id
    LIMIT %(limit)s
)
RETURNING *

-- name: lock_expired_leases
-- Running jobs whose lease expired (the IMMEDIATE transaction is the lock).
SELECT id, run_token FROM queues_job
WHERE status = 'Running' AND lease_expires_at < %(now)s
  AND (%(queue)s IS NULL OR queue_name = %(queue)s)
ORDER BY lease_expires_at
LIMIT %(limit)s
