"""mpi4py interop with a real mpi4py built on Coupler's MPI (registered by
tests/python/CMakeLists.txt only where one is importable; CMake says so):
    mpiexec -n 2 python3 mpi4py_real.py
coupler.init takes an mpi4py communicator (a split of COMM_WORLD), the
component communicator comes back as an mpi4py MPI.Comm, and mpi4py's
collectives run on it."""

import os
import sys
import tempfile

from mpi4py import MPI

import coupler

world = MPI.COMM_WORLD
ok = coupler.mpi4py_usable()
wf = os.path.join(tempfile.gettempdir(), f"cpl-mpi4py-{os.getppid()}.yaml")
if world.Get_rank() == 0:
    with open(wf, "w") as f:
        f.write("name: m\ncomponents:\n  - {name: a, nprocs: 2, command: x}\n")
world.Barrier()
with coupler.init(world.Dup(), workflow=wf, component="a") as ctx:
    comm = ctx.comm
    ok &= isinstance(comm, MPI.Comm) and comm.Get_size() == 2
    ok &= comm.allreduce(comm.Get_rank() + 1, op=MPI.SUM) == 3
    ok &= comm.py2f() == ctx.ccomm.handle
total = world.allreduce(0 if ok else 1)
if world.Get_rank() == 0:
    os.unlink(wf)
    print(f"mpi4py_real: {'passed' if total == 0 else 'FAILED'} with "
          f"{MPI.Get_library_version().splitlines()[0]}")
sys.exit(1 if total else 0)
