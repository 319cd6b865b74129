"""The CPUs this process may use: those of its affinity mask (taskset, a container's
cpuset) and, in a container started with a CPU limit (`docker run --cpus 2`, a
Kubernetes limit), its CPU quota, whichever allows fewer. The quota is the time a cgroup
may run per period: cgroup v2's `cpu.max` ("200000 100000" is two CPUs' worth, "max"
none), cgroup v1's `cpu.cfs_quota_us` (-1 for none) over `cpu.cfs_period_us`. The
process's own cgroup and every one above it count, the tightest deciding.

Both are read from the files the kernel shows, under `CGROUP_ROOT` for the process's
cgroups as `MEMBERSHIP` lists them: tests show the code a quota of their own there.
Only the standard library's lightest modules are imported: the launcher's head start
comes through here (evalproto.base.processes).
"""

from __future__ import annotations

import math
import os
from functools import lru_cache
from typing import Iterator, List, Optional, Tuple

CGROUP_ROOT = "/sys/fs/cgroup"
MEMBERSHIP = "/proc/self/cgroup"


def usable_cpus(root: Optional[str] = None, membership: Optional[str] = None) -> int:
    """The CPUs this process may use: the affinity mask's, fewer under a CPU quota (a
    quota of 1.5 CPUs is 2: two threads can use it all)."""
    if hasattr(os, "sched_getaffinity"):
        cpus = len(os.sched_getaffinity(0))
    else:  # macOS and Windows: no mask to read
        cpus = os.cpu_count() or 1
    quota = (cpu_quota(root, membership) if root is not None or membership is not None
             else _own_quota())
    return max(1, min(cpus, math.ceil(quota))) if quota is not None else max(1, cpus)


@lru_cache(maxsize=None)
def _own_quota() -> Optional[float]:
    """This process's quota, read once: kernels ask for every batch, and a container's
    limit does not change while it runs."""
    return cpu_quota()


def cpu_quota(root: Optional[str] = None, membership: Optional[str] = None
              ) -> Optional[float]:
    """The CPUs' worth of time per period that the process's cgroups allow (the least
    along the way from its own cgroup up to the top), or None where none is set or
    nothing can be read (no cgroups: another system, or no /sys)."""
    top = root or CGROUP_ROOT
    try:
        lines = _read(membership or MEMBERSHIP).splitlines()
    except OSError:
        return None
    quotas = [quota for controllers, path in _memberships(lines)
              for directory in _directories(top, controllers, path)
              for quota in [_quota_in(directory, v2=not controllers)] if quota is not None]
    return min(quotas, default=None)


def _memberships(lines: List[str]) -> Iterator[Tuple[str, str]]:
    """(controllers, cgroup path) of each line of /proc/self/cgroup that limits CPU time:
    cgroup v2's ("0::/path", no controllers named) and v1's cpu controller's."""
    for line in lines:
        fields = line.strip().split(":", 2)
        if len(fields) != 3:
            continue
        _, controllers, path = fields
        if not controllers or "cpu" in controllers.split(","):
            yield controllers, path


def _directories(top: str, controllers: str, path: str) -> Iterator[str]:
    """The directories of a cgroup and of those above it, where they are mounted: v2's
    under the root itself, v1's under the controller's mount (named cpu or, e.g.,
    cpu,cpuacct). Inside a container the cgroup's path may not exist below the mount
    (the mount is the container's own cgroup): the mount itself is then the nearest."""
    if controllers:
        mounts = [os.path.join(top, name) for name in dict.fromkeys(["cpu", controllers])
                  if os.path.isdir(os.path.join(top, name))]
        if not mounts:
            return
        top = mounts[0]
    parts = [part for part in path.split("/") if part]
    for depth in range(len(parts), -1, -1):
        directory = os.path.join(top, *parts[:depth])
        if os.path.isdir(directory):
            yield directory


def _quota_in(directory: str, v2: bool) -> Optional[float]:
    """The quota a cgroup directory sets, in CPUs, or None for none (or unreadable)."""
    try:
        if v2:
            limit, _, period = _read(os.path.join(directory, "cpu.max")).strip().partition(" ")
            if limit == "max":
                return None
            return int(limit) / int(period or "100000")
        quota = int(_read(os.path.join(directory, "cpu.cfs_quota_us")))
        if quota < 0:
            return None
        return quota / int(_read(os.path.join(directory, "cpu.cfs_period_us")))
    except (OSError, ValueError, ZeroDivisionError):
        return None


def _read(path: str) -> str:
    with open(path, encoding="utf-8") as stream:
        return stream.read()
