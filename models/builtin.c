/* The list of built-in model kinds. Add a kind: declare its descriptor in
 * its folder's header and append it here. */
#include <stddef.h>

#include "models/builtin.h"
#include "models/ecology/ecology.h"
#include "models/factory/factory.h"
#include "models/gateway/gateway.h"
#include "models/hil/hil.h"
#include "models/phold/phold.h"
#include "models/rows/rows.h"
#include "models/sqss/sqss.h"
#include "models/walkers/walkers.h"

static const kr_kind_desc_t *const builtin_kinds[] = {
    &kr__factory_assembly_kind,
    &kr__factory_robots_kind,
    &kr__factory_bath_kind,
    &kr__sqss_kind,
    &kr__phold_kind,
    &kr__rows_kind,
    &kr__walkers_kind,
    &kr__ecology_kind,
    &kr__hil_feeder_kind,
    &kr__hil_belt_kind,
    &kr__hil_controller_kind,
    &kr__gateway_kind,
};

kr_status_t kr__models_register_builtin(kr_kinds_t *kinds)
{
    for (size_t i = 0; i < sizeof builtin_kinds / sizeof builtin_kinds[0]; i++) {
        kr_status_t st = kr_kind_register(kinds, builtin_kinds[i]);
        if (st != KR_OK) return st;
    }
    return KR_OK;
}
