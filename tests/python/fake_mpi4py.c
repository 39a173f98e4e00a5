/* Stand-in for Debian's mpi4py extension, linked to Open MPI's soname
 * (tests/python/CMakeLists.txt). coupler must refuse it unloaded: if it
 * were imported, Python would fail on the missing PyInit_MPI instead. */
int cpl_fake_ompi_init(void);
int cpl_fake_mpi4py_uses_mpi(void);
int cpl_fake_mpi4py_uses_mpi(void) { return cpl_fake_ompi_init(); }
