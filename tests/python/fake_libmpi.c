/* Stand-in for Open MPI's libmpi.so.40 (tests/python/CMakeLists.txt). */
int cpl_fake_ompi_init(void);
int cpl_fake_ompi_init(void) { return 40; }
