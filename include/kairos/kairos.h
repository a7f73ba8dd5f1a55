/* kairos: a parallel, distributed simulation runtime. Includes every public
 * header. */
#ifndef KAIROS_KAIROS_H
#define KAIROS_KAIROS_H

#include "kairos/status.h"
#include "kairos/entity.h"
#include "kairos/registry.h"
#include "kairos/world.h"
#include "kairos/component.h"
#include "kairos/behavior.h"
#include "kairos/hierarchy.h"
#include "kairos/channel.h"
#include "kairos/name.h"
#include "kairos/view.h"
#include "kairos/spatial.h"
#include "kairos/buffer.h"
#include "kairos/serializer.h"
#include "kairos/pack.h"
#include "kairos/time.h"
#include "kairos/rng.h"
#include "kairos/dist.h"
#include "kairos/log.h"
#include "kairos/event.h"
#include "kairos/sim.h"
#include "kairos/model.h"
#include "kairos/stop.h"
#include "kairos/sync.h"
#include "kairos/ode.h"
#include "kairos/continuous.h"
#include "kairos/emulation.h"
#include "kairos/region.h"
#include "kairos/kind.h"
#include "kairos/statistics.h"

#endif
