/* What a simulator receives: the sync-event types it runs on the target
 * side, declared by its kind (kr_kind_desc_t.receives) or through
 * kr_sim_receive. A type's target-side handler belongs to the kind that
 * handles it, yet any kind may list the type to send it; without this a
 * sync-event sent to the wrong simulator ran another kind's handler on its
 * state. The set is a bitmap over type ids; NULL until something is
 * declared, and then every sync-event to the simulator is checked
 * (kr_schedule_sync) and the emulation gateway forwards input only to
 * what is declared (models/gateway/gateway.c). */
#include <stdlib.h>
#include <string.h>

#include "base/error.h"
#include "schedulers/model_private.h"

kr_status_t kr_sim_receive(kr_sim_t *sim, kr_event_type_t type)
{
    if (!sim) return kr__fail(KR_ERR_INVALID_ARG, "kr_sim_receive: null simulator");
    /* (senders remember what passed: the set is fixed once the model runs) */
    if (sim->model->started)
        return kr__fail(KR_ERR_STATE, "kr_sim_receive: '%s': the model has started; declare before kr_model_start",
                        sim->name);
    const kr__event_type_rec_t *t = kr__event_type(sim->model, type);
    if (!t || !t->desc.on_target_side)
        return kr__fail(KR_ERR_INVALID_ARG, "kr_sim_receive: '%s': event type %u%s%s%s is not a sync-event type (it "
                        "has no on_target_side)", sim->name, type, t ? " '" : "", t ? t->name : "", t ? "'" : "");
    uint32_t word = type / 64;
    if (word >= sim->receives_words) {
        uint32_t words = word + 1;
        uint64_t *bits = realloc(sim->receives, words * sizeof *bits);
        if (!bits) return kr__fail(KR_ERR_NOMEM, "kr_sim_receive: out of memory");
        memset(bits + sim->receives_words, 0, (words - sim->receives_words) * sizeof *bits);
        sim->receives = bits;
        sim->receives_words = words;
    }
    sim->receives[word] |= (uint64_t)1 << (type % 64);
    return KR_OK;
}

kr_status_t kr__sim_receives_declared(kr_sim_t *sim)
{
    if (sim->receives) return KR_OK;
    if (!(sim->receives = calloc(1, sizeof *sim->receives))) return kr__fail(KR_ERR_NOMEM, "out of memory");
    sim->receives_words = 1;
    return KR_OK;
}

bool kr_sim_receives(const kr_sim_t *sim, kr_event_type_t type)
{
    return sim && kr__sim_receives(sim, type);
}

bool kr_sim_takes(const kr_sim_t *sim, kr_event_type_t type)
{
    return sim && (!sim->receives || kr__sim_receives(sim, type));
}
