/* Under AddressSanitizer only (the sanitizer build of scripts/test): keeps
 * every shared object loaded past MPI_Finalize.
 *
 * Open MPI unloads its plug-ins (mca_*.so) at MPI_Finalize while the
 * memory they allocated is still held through their own globals. At exit
 * LeakSanitizer then finds some 3,300 blocks per rank that nothing points
 * to any more, all of them Open MPI's, each matched against
 * tests/cli/lsan-mpi.supp; the frames of an unloaded plug-in belong to no
 * module, and looking each one up rereads /proc/self/maps. That came to
 * about a third of a short two-rank run under the sanitizers (0.4 s of
 * 1.3 s), for every mpirun of the test suite. Marked RTLD_NODELETE, the
 * plug-ins stay mapped: their memory is reachable, so not a leak, and a
 * leak of kairos's own is found as before. A release build does nothing
 * here. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>

#include "cli/sanitizer_exit.h"

#if defined(__SANITIZE_ADDRESS__)
#define KR_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KR_ASAN 1
#endif
#endif

#ifdef KR_ASAN
/* Takes one more reference to an object already loaded (RTLD_NOLOAD never
 * loads anything) and marks it never to be unloaded. The reference is
 * dropped by the process's exit, as is everything else. */
static int keep_one(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    if (info->dlpi_name && info->dlpi_name[0]) (void)dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
    return 0;
}
#endif

void kr__keep_shared_objects_loaded(void)
{
#ifdef KR_ASAN
    dl_iterate_phdr(keep_one, NULL);
#endif
}
