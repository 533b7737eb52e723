"""Counter tables kept by database triggers in the transaction of each write they count: jobs
per queue and status, completions and failed attempts per minute, and their hourly roll-up.
Readers sum a few rows instead of counting the jobs. They are the SQL store's alone: no
trigger runs in memory, so the memory store keeps no counters. See docs/design/counters.md."""
