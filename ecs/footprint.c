/* A world's memory, counted from its structures (ecs/footprint.h). */
#include "ecs/footprint.h"
#include "ecs/world_private.h"

static size_t hmap_bytes(const kr__hmap_t *m) { return (size_t)m->capacity * sizeof(kr__hmap_slot_t); }

static size_t table_bytes(const kr__table_t *t, size_t *components)
{
    size_t data = 0;
    for (uint32_t i = 0; i < t->type_count; i++)
        if (t->columns[i].data) data += (size_t)t->capacity * t->columns[i].size;
    *components += data;
    return sizeof *t + data + (size_t)t->type_count * (sizeof *t->types + sizeof *t->columns) +
           (size_t)t->capacity * sizeof *t->entities + (size_t)t->hole_capacity * sizeof *t->holes +
           (size_t)t->column_of_size * sizeof *t->column_of + 2 * (size_t)t->edge_size * sizeof *t->add_edge +
           (size_t)t->behavior_count * sizeof *t->behavior_columns;
}

static size_t spatial_bytes(const kr__spatial_state_t *s)
{
    size_t n = (size_t)s->entry_capacity * (sizeof *s->entries + sizeof *s->gens) +
               ((size_t)s->grid_cells + s->table_capacity) * sizeof(kr__spatial_cell_rec_t);
    /* cells with more members than fit inline keep them on the heap */
    for (uint32_t i = 0; i < s->grid_cells + s->table_capacity; i++) {
        const kr__spatial_cell_rec_t *c = kr__cell_at(s, i);
        if (c->heap) n += (size_t)c->capacity * sizeof(kr_entity_t);
    }
    return n;
}

kr__world_footprint_t kr__world_footprint(const kr_world_t *w)
{
    kr__world_footprint_t f = { 0 };
    if (!w) return f;
    f.entities = w->live;
    size_t n = sizeof *w + (size_t)w->record_capacity * sizeof *w->records +
               (size_t)w->tree_capacity * sizeof *w->tree + (size_t)w->names_capacity * sizeof *w->names +
               hmap_bytes(&w->name_map) + (size_t)w->table_capacity * sizeof *w->tables + hmap_bytes(&w->table_map) +
               (size_t)w->dirty_capacity * sizeof *w->dirty_tables + (size_t)w->pool_slots * sizeof *w->pools +
               (size_t)w->pool_count * sizeof *w->pool_ids + (size_t)w->scratch_capacity * sizeof *w->scratch +
               (size_t)w->note_capacity * sizeof *w->channel_notes + spatial_bytes(&w->spatial);
    /* (name slots past the records, or of unnamed entities, are not set) */
    for (uint32_t i = 0; i < w->names_capacity && i < w->record_count; i++)
        if (w->records[i].flags & KR__REC_NAMED) n += strlen(w->names[i].str) + 1;
    for (uint32_t i = 0; i < w->table_count; i++) n += table_bytes(w->tables[i], &f.component_bytes);
    for (uint32_t i = 0; i < w->pool_slots; i++) {
        const kr__sparse_pool_t *p = w->pools[i];
        if (!p) continue;
        size_t data = (size_t)p->capacity * p->size;
        f.component_bytes += data;
        n += sizeof *p + data + (size_t)p->slot_capacity * sizeof *p->slot_of + (size_t)p->capacity * sizeof *p->entities;
    }
    f.bytes = n;
    return f;
}
