#!/usr/bin/python3
"""A kazoo client that takes kazoo's own lock recipes on one lock path, driven line by line
from stdin by zk_kazoo_test.cpp, so that dlock and kazoo contend as two real processes.

    kazoo_peer.py HOSTS PATH

Commands (one reply line each, flushed):
    try KIND                  -> "held KIND" | "busy KIND"     (acquire without blocking)
    acquire KIND              -> "held KIND"                   (blocks until granted)
    release                   -> "released"
    contend KIND ROUNDS DIR   -> "done ROUNDS VIOLATIONS"      (see holding())
    quit
KIND is lock (kazoo's Lock), read (ReadLock) or write (WriteLock). Each is given the
extra_lock_patterns docs/zookeeper.md tells a kazoo user to pass, so kazoo sees dlock's nodes.
"""
import os
import random
import sys
import time

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

# dlock's node markers (docs/zookeeper.md): a mutex's, a writer's (also a permit's and an
# election candidate's), a reader's. A reader is kept out only by the exclusive ones.
EXCLUSIVE_PATTERNS = ["-lock-", "-__WRIT__", "-__READ__"]
READER_PATTERNS = ["-lock-", "-__WRIT__"]


def make_lock(zk, path, kind):
    if kind == "lock":
        return zk.Lock(path, "kazoo pid=%d" % os.getpid(), extra_lock_patterns=EXCLUSIVE_PATTERNS)
    if kind == "write":
        return zk.WriteLock(path, "kazoo pid=%d" % os.getpid(),
                            extra_lock_patterns=EXCLUSIVE_PATTERNS)
    if kind == "read":
        return zk.ReadLock(path, "kazoo pid=%d" % os.getpid(), extra_lock_patterns=READER_PATTERNS)
    raise ValueError("unknown lock kind " + kind)


def acquire(zk, path, kind, blocking):
    # dlock's lock node is a container the server reaps once empty: a create that lands just
    # after the reap finds no parent. kazoo does not retry that; a new lock object does.
    for _ in range(20):
        lock = make_lock(zk, path, kind)
        try:
            return lock, lock.acquire(blocking=blocking)
        except NoNodeError:
            time.sleep(0.01)
    raise RuntimeError("could not create a lock node under " + path)


def holding(directory, kind):
    """Marks a hold in `directory`, shared with the dlock side of the test: creates its own
    file, then looks for a hold that must not overlap it (any other for an exclusive hold, a
    writer's for a reader), before and after a short hold. Returns the violations seen."""
    me = os.path.join(directory, "%s.kazoo.%d" % ("r" if kind == "read" else "w", os.getpid()))
    with open(me, "w"):
        pass
    violations = 0

    def others():
        names = [n for n in os.listdir(directory) if os.path.join(directory, n) != me]
        return names if kind != "read" else [n for n in names if n.startswith("w.")]

    if others():
        violations += 1
    time.sleep(random.uniform(0.002, 0.015))
    if others():
        violations += 1
    os.unlink(me)
    return violations


def main():
    hosts, path = sys.argv[1], sys.argv[2]
    zk = KazooClient(hosts=hosts, timeout=10.0)
    zk.start(timeout=15)
    held = None
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        cmd = words[0]
        if cmd == "try" or cmd == "acquire":
            lock, got = acquire(zk, path, words[1], blocking=cmd == "acquire")
            if got:
                held = lock
            print(("held " if got else "busy ") + words[1], flush=True)
        elif cmd == "release":
            if held is not None:
                held.release()
                held = None
            print("released", flush=True)
        elif cmd == "contend":
            kind, rounds, directory = words[1], int(words[2]), words[3]
            violations = 0
            for _ in range(rounds):
                lock, _ = acquire(zk, path, kind, blocking=True)
                violations += holding(directory, kind)
                lock.release()
            print("done %d %d" % (rounds, violations), flush=True)
        elif cmd == "quit":
            break
    zk.stop()
    zk.close()


if __name__ == "__main__":
    main()
