/* What the kairos command does before MPI_Finalize in a sanitizer build
 * (cli/sanitizer_exit.c). */
#ifndef KAIROS_CLI_SANITIZER_EXIT_H
#define KAIROS_CLI_SANITIZER_EXIT_H

/* Under AddressSanitizer, keeps every shared object loaded (Open MPI's
 * plug-ins included) until the process exits, so that LeakSanitizer does
 * not count the memory of unloaded plug-ins as leaked; does nothing
 * otherwise. */
void kr__keep_shared_objects_loaded(void);

#endif
