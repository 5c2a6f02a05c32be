"""Allreduce / Allgather / Bcast / Scan / Exscan / Reduce of numpy arrays
through mpi4py, and the non-blocking Iallreduce / Ibcast / Iallgather /
Iscan (several pending at once, completed by Waitall or a Test loop), each
result checked against a local computation: every
rank's data is a function of its rank, so every rank can compute every
result itself. Prints "mpi4py_check: OK (<n> checks)" on rank 0.
Run under mpiexec with or without libcollplan_pmpi preloaded."""
import sys

import numpy as np
from mpi4py import MPI

comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
checks = 0
failures = []


def data(r, n, dtype, seed):
    rng = np.random.default_rng(1000 * seed + r)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-1000, 1000, n).astype(dtype)
    return rng.uniform(-1, 1, n).astype(dtype)


def check(what, got, want, tol):
    """tol 0: equal; otherwise within tol, relative and absolute (the sums
    are taken in another order than numpy's)."""
    global checks
    checks += 1
    ok = np.array_equal(got, want) if tol == 0 else np.allclose(got, want, rtol=tol, atol=tol)
    if not ok:
        failures.append(f"rank {rank}: {what}: wrong result")


for n in (1, 7, 1000, 100003):
    for dtype in (np.int32, np.int64, np.float64, np.float32):
        exact = np.issubdtype(dtype, np.integer)
        tol = 0 if exact else (1e-5 if dtype == np.float32 else 1e-12)
        wide = dtype if exact else np.float64
        mine = data(rank, n, dtype, n)
        alls = [data(r, n, dtype, n) for r in range(size)]
        out = np.empty_like(mine)
        comm.Allreduce(mine, out, op=MPI.SUM)
        check(f"Allreduce SUM {dtype.__name__} n={n}", out.astype(wide),
              np.sum(np.array(alls, dtype=wide), axis=0), tol)
        comm.Allreduce(mine, out, op=MPI.MAX)
        check(f"Allreduce MAX {dtype.__name__} n={n}", out, np.max(np.array(alls), axis=0), 0)
        comm.Scan(mine, out, op=MPI.SUM)
        check(f"Scan SUM {dtype.__name__} n={n}", out.astype(wide),
              np.sum(np.array(alls[: rank + 1], dtype=wide), axis=0), tol)
        if rank > 0:
            comm.Exscan(mine, out, op=MPI.SUM)
            check(f"Exscan SUM {dtype.__name__} n={n}", out.astype(wide),
                  np.sum(np.array(alls[:rank], dtype=wide), axis=0), tol)
        else:
            comm.Exscan(mine, out, op=MPI.SUM)
        red = np.empty_like(mine)
        comm.Reduce(mine, red, op=MPI.MIN, root=size - 1)
        if rank == size - 1:
            check(f"Reduce MIN {dtype.__name__} n={n}", red, np.min(np.array(alls), axis=0), 0)
        gathered = np.empty((size, n), dtype=dtype)
        comm.Allgather(mine, gathered)
        check(f"Allgather {dtype.__name__} n={n}", gathered, np.array(alls), 0)
        for root in (0, size - 1):
            buf = mine.copy() if rank == root else np.zeros_like(mine)
            comm.Bcast(buf, root=root)
            check(f"Bcast {dtype.__name__} n={n} root={root}", buf, alls[root], 0)

# Non-blocking: four calls pending at once, then Waitall; and a Test loop.
for n in (7, 100003):
    for dtype in (np.int64, np.float64):
        exact = np.issubdtype(dtype, np.integer)
        tol = 0 if exact else 1e-12
        mine = data(rank, n, dtype, n + 1)
        alls = [data(r, n, dtype, n + 1) for r in range(size)]
        red, scan = np.empty_like(mine), np.empty_like(mine)
        gathered = np.empty((size, n), dtype=dtype)
        buf = mine.copy() if rank == 0 else np.zeros_like(mine)
        reqs = [comm.Iallreduce(mine, red, op=MPI.SUM), comm.Ibcast(buf, root=0),
                comm.Iallgather(mine, gathered), comm.Iscan(mine, scan, op=MPI.SUM)]
        MPI.Request.Waitall(reqs)
        check(f"Iallreduce SUM {dtype.__name__} n={n}", red, np.sum(np.array(alls), axis=0), tol)
        check(f"Ibcast {dtype.__name__} n={n}", buf, alls[0], 0)
        check(f"Iallgather {dtype.__name__} n={n}", gathered, np.array(alls), 0)
        check(f"Iscan SUM {dtype.__name__} n={n}", scan, np.sum(np.array(alls[: rank + 1]), axis=0), tol)
        req = comm.Iallreduce(mine, red, op=MPI.MAX)
        while not req.Test():
            pass
        check(f"Iallreduce MAX by Test {dtype.__name__} n={n}", red, np.max(np.array(alls), axis=0), 0)

for f in failures[:20]:
    print("mpi4py_check:", f, file=sys.stderr)
total_fail = comm.allreduce(len(failures))
total = comm.allreduce(checks)
if rank == 0:
    print(f"mpi4py_check: {'OK' if total_fail == 0 else 'FAILED'} ({total} checks, {total_fail} failed)")
sys.exit(1 if total_fail else 0)
