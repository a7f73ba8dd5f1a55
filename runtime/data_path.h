/* Where a file or folder that kairos ships is (the sweep plot script, the
 * viewer's page): meson.build compiles in both places. Not public API. */
#ifndef KAIROS_RUNTIME_DATA_PATH_H
#define KAIROS_RUNTIME_DATA_PATH_H

#include <stddef.h>

/* For a binary of this build tree, `source` (in the source tree); for an
 * installed one, `installed` (DATADIR/..., relative to the prefix) under
 * the binary's own prefix (so `meson install --destdir` and a moved prefix
 * work), then under the configured prefix; when neither exists, the first
 * of these (never the source tree). The result is `source` or `out`. */
const char *kr__data_path(const char *source, const char *installed, char *out, size_t cap);

#endif
