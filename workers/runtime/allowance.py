"""What a worker's claims may take: throttle permits and rate-limit tokens. One permit and
one token of each limiter go with a job from its claim; the permit comes back when the job
is done with, the tokens only if it was not run."""

from __future__ import annotations


class Allowance:
    def __init__(self, throttle, limiters) -> None:
        self.throttle = throttle
        self.limiters = list(limiters)

    def take(self, wanted: int) -> int:
        """Take permits and tokens for up to `wanted` jobs; how many were taken."""
        throttle = self.throttle
        permits = throttle.try_acquire(wanted) if throttle else wanted
        n = permits
        taken = []
        for limiter in self.limiters:
            got = limiter.try_take(n)
            taken.append((limiter, got))
            n = min(n, got)
        # Keep only as many permits and tokens as the scarcest of them allows.
        for limiter, got in taken:
            limiter.refund(got - n)
        if throttle:
            throttle.release(permits - n)
        return n

    def not_run(self, n: int) -> None:
        """Return the permits and tokens of `n` claimed (or asked for) jobs not run."""
        self.release(n)
        self.refund(n)

    def release(self, n: int) -> None:
        """The permits of `n` jobs done with."""
        if n > 0 and self.throttle:
            self.throttle.release(n)

    def refund(self, n: int) -> None:
        """The tokens of `n` jobs that did not run."""
        if n > 0:
            for limiter in self.limiters:
                limiter.refund(n)
