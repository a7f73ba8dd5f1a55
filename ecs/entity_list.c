/* Entity lists (kairos/state.h): a slot of a simulator's state holding
 * entity ids in insertion order, so that state needs no raw pointers. */
#include <stdlib.h>
#include <string.h>
#include "kairos/entity.h"
#include "base/error.h"
#include "base/grow.h"

kr_status_t kr_entity_list_push(kr_entity_list_t *l, kr_entity_t e)
{
    if (!l) return kr__fail(KR_ERR_INVALID_ARG, "kr_entity_list_push: null list");
    if (l->count == l->capacity && KR__GROW_U32(l->items, l->capacity, l->count + 1, 8, "kr_entity_list_push"))
        return kr_last_status();
    l->items[l->count++] = e;
    return KR_OK;
}

void kr_entity_list_remove_at(kr_entity_list_t *l, uint32_t index)
{
    if (!l || index >= l->count) return;
    memmove(l->items + index, l->items + index + 1, (size_t)(l->count - index - 1) * sizeof *l->items);
    l->count--;
}

bool kr_entity_list_remove(kr_entity_list_t *l, kr_entity_t e)
{
    for (uint32_t i = 0; l && i < l->count; i++)
        if (l->items[i] == e) {
            kr_entity_list_remove_at(l, i);
            return true;
        }
    return false;
}

void kr_entity_list_fini(kr_entity_list_t *l)
{
    if (!l) return;
    free(l->items);
    *l = (kr_entity_list_t){ 0 };
}
