/* Entity names: ERS's create / find / destroy example, renaming and
 * removing, duplicate names (find answers the oldest holder, then the next
 * oldest), release on destroy, recycled slots, 100k names, bad arguments. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kairos/kairos.h"

/* Worlds made by a test are freed by the suite's fini, so a failed
 * assertion does not leak them (keeps sanitizer output to the point). */
static kr_world_t *worlds[4];

static kr_world_t *make_world(void)
{
    kr_world_t *w = kr_world_create(NULL);
    cr_assert_not_null(w, "%s", kr_last_error());
    for (int i = 0; i < 4; i++)
        if (!worlds[i]) { worlds[i] = w; break; }
    return w;
}

static void drop_world(kr_world_t *w)
{
    for (int i = 0; i < 4; i++)
        if (worlds[i] == w) worlds[i] = NULL;
    kr_world_destroy(w);
}

static void cleanup(void)
{
    for (int i = 0; i < 4; i++) {
        if (worlds[i]) kr_world_destroy(worlds[i]);
        worlds[i] = NULL;
    }
}

TestSuite(name, .fini = cleanup);

static kr_entity_t named(kr_world_t *w, const char *name)
{
    kr_entity_t e = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = name });
    cr_assert_neq(e, KR_ENTITY_INVALID, "%s", kr_last_error());
    return e;
}

static void set_name(kr_world_t *w, kr_entity_t e, const char *name)
{
    cr_assert_eq(kr_entity_set_name(w, e, name), KR_OK, "%s", kr_last_error());
}

/* ---- ERS's example ------------------------------------------------ */

Test(name, seed_create_find_destroy)
{
    kr_world_t *w = make_world();
    kr_entity_t some = named(w, "SomeEntity");
    kr_entity_t found = kr_entity_find(w, "SomeEntity");
    cr_assert_eq(found, some);
    cr_assert_str_eq(kr_entity_name(w, some), "SomeEntity");
    cr_assert_eq(kr_entity_destroy(w, some), KR_OK);
    cr_assert_eq(kr_entity_find(w, "SomeEntity"), KR_ENTITY_INVALID);
    drop_world(w);
}

Test(name, name_is_copied)
{
    kr_world_t *w = make_world();
    char buf[32];
    strcpy(buf, "Conveyor");
    kr_entity_t e = named(w, buf);
    strcpy(buf, "Scribbled");
    cr_assert_str_eq(kr_entity_name(w, e), "Conveyor");
    cr_assert_eq(kr_entity_find(w, "Conveyor"), e);
    cr_assert_eq(kr_entity_find(w, "Scribbled"), KR_ENTITY_INVALID);
    cr_assert_neq((const void *)kr_entity_name(w, e), (const void *)buf);
    drop_world(w);
}

Test(name, unnamed_entities)
{
    kr_world_t *w = make_world();
    kr_entity_t a = kr_entity_create(w);
    kr_entity_t b = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = "" });
    cr_assert_neq(b, KR_ENTITY_INVALID);
    kr_clear_error();
    cr_assert_null(kr_entity_name(w, a));
    cr_assert_null(kr_entity_name(w, b));
    cr_assert_eq(kr_entity_find(w, ""), KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_find(w, "a"), KR_ENTITY_INVALID);
    drop_world(w);
}

Test(name, set_name_after_creation_and_names_are_exact)
{
    kr_world_t *w = make_world();
    kr_entity_t a = kr_entity_create(w);
    set_name(w, a, "Source");
    cr_assert_eq(kr_entity_find(w, "Source"), a);
    /* Lookups compare whole strings, case-sensitively. */
    cr_assert_eq(kr_entity_find(w, "source"), KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_find(w, "Sourc"), KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_find(w, "Source "), KR_ENTITY_INVALID);
    /* Non-ASCII bytes are just bytes. */
    kr_entity_t u = named(w, "Förderband \xe2\x86\x92 3");
    cr_assert_eq(kr_entity_find(w, "Förderband \xe2\x86\x92 3"), u);
    drop_world(w);
}

/* ---- rename and remove ------------------------------------------------- */

Test(name, rename_moves_the_lookup)
{
    kr_world_t *w = make_world();
    kr_entity_t e = named(w, "Old");
    set_name(w, e, "New");
    cr_assert_str_eq(kr_entity_name(w, e), "New");
    cr_assert_eq(kr_entity_find(w, "New"), e);
    cr_assert_eq(kr_entity_find(w, "Old"), KR_ENTITY_INVALID);
    /* Renaming with the entity's own name string as the argument. */
    set_name(w, e, kr_entity_name(w, e));
    cr_assert_str_eq(kr_entity_name(w, e), "New");
    cr_assert_eq(kr_entity_find(w, "New"), e);
    drop_world(w);
}

Test(name, null_or_empty_removes_the_name)
{
    kr_world_t *w = make_world();
    kr_entity_t a = named(w, "A"), b = named(w, "B");
    set_name(w, a, NULL);
    cr_assert_null(kr_entity_name(w, a));
    cr_assert_eq(kr_entity_find(w, "A"), KR_ENTITY_INVALID);
    set_name(w, b, "");
    cr_assert_null(kr_entity_name(w, b));
    cr_assert_eq(kr_entity_find(w, "B"), KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_find(w, ""), KR_ENTITY_INVALID);
    /* Removing a name that is not there is fine; the entity lives on. */
    set_name(w, a, NULL);
    cr_assert(kr_entity_alive(w, a));
    /* And the name can come back. */
    set_name(w, a, "A");
    cr_assert_eq(kr_entity_find(w, "A"), a);
    drop_world(w);
}

/* ---- duplicates -------------------------------------------------------- */

Test(name, duplicates_find_the_oldest_holder)
{
    kr_world_t *w = make_world();
    kr_entity_t a = named(w, "Box"), b = named(w, "Box"), c = named(w, "Box");
    cr_assert_eq(kr_entity_find(w, "Box"), a);
    cr_assert_str_eq(kr_entity_name(w, b), "Box");
    cr_assert_eq(kr_entity_destroy(w, a), KR_OK);
    cr_assert_eq(kr_entity_find(w, "Box"), b);
    set_name(w, b, "Crate");                       /* renamed away */
    cr_assert_eq(kr_entity_find(w, "Box"), c);
    cr_assert_eq(kr_entity_find(w, "Crate"), b);
    set_name(w, b, "Box");                         /* back, now the newest */
    cr_assert_eq(kr_entity_find(w, "Box"), c);
    set_name(w, c, NULL);
    cr_assert_eq(kr_entity_find(w, "Box"), b);
    cr_assert_eq(kr_entity_destroy(w, b), KR_OK);
    cr_assert_eq(kr_entity_find(w, "Box"), KR_ENTITY_INVALID);
    drop_world(w);
}

Test(name, holder_order_is_by_when_the_name_was_taken)
{
    kr_world_t *w = make_world();
    /* Created in order a, b, c but named in order c, a, b. */
    kr_entity_t a = kr_entity_create(w), b = kr_entity_create(w), c = kr_entity_create(w);
    set_name(w, c, "X");
    set_name(w, a, "X");
    set_name(w, b, "X");
    kr_entity_t want[] = { c, a, b };
    for (int i = 0; i < 3; i++) {
        cr_assert_eq(kr_entity_find(w, "X"), want[i], "holder %d", i);
        cr_assert_eq(kr_entity_destroy(w, want[i]), KR_OK);
    }
    cr_assert_eq(kr_entity_find(w, "X"), KR_ENTITY_INVALID);
    drop_world(w);
}

Test(name, removing_a_middle_or_newest_holder_keeps_the_oldest)
{
    kr_world_t *w = make_world();
    kr_entity_t e[5];
    for (int i = 0; i < 5; i++) e[i] = named(w, "Dup");
    cr_assert_eq(kr_entity_destroy(w, e[2]), KR_OK);
    cr_assert_eq(kr_entity_find(w, "Dup"), e[0]);
    set_name(w, e[4], "Other");
    cr_assert_eq(kr_entity_find(w, "Dup"), e[0]);
    cr_assert_eq(kr_entity_destroy(w, e[0]), KR_OK);
    cr_assert_eq(kr_entity_find(w, "Dup"), e[1]);
    cr_assert_eq(kr_entity_destroy(w, e[1]), KR_OK);
    cr_assert_eq(kr_entity_find(w, "Dup"), e[3]);
    cr_assert_eq(kr_entity_find(w, "Other"), e[4]);
    drop_world(w);
}

/* Setting the name an entity already has does not change who has held it
 * the longest. */
Test(name, setting_the_same_name_keeps_seniority)
{
    kr_world_t *w = make_world();
    kr_entity_t a = named(w, "Dup"), b = named(w, "Dup");
    set_name(w, a, "Dup");
    cr_assert_eq(kr_entity_find(w, "Dup"), a,
                 "re-setting the same name made the oldest holder the newest (find returned %s)",
                 kr_entity_find(w, "Dup") == b ? "the younger holder" : "something else");
    drop_world(w);
}

/* ---- destroy and recycling ---------------------------------------------- */

Test(name, names_are_released_on_destroy_and_subtree_destroy)
{
    kr_world_t *w = make_world();
    kr_entity_t root = named(w, "Root");
    kr_entity_t kid = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = "Kid", .parent = root });
    kr_entity_t grand = kr_entity_create_desc(w, &(kr_entity_desc_t){ .name = "Grand", .parent = kid });
    cr_assert_neq(grand, KR_ENTITY_INVALID, "%s", kr_last_error());
    cr_assert_eq(kr_entity_find(w, "Grand"), grand);
    cr_assert_eq(kr_entity_destroy(w, root), KR_OK);
    cr_assert_eq(kr_entity_find(w, "Root"), KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_find(w, "Kid"), KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_find(w, "Grand"), KR_ENTITY_INVALID);
    /* The names are free for new holders. */
    kr_entity_t again = named(w, "Kid");
    cr_assert_eq(kr_entity_find(w, "Kid"), again);
    drop_world(w);
}

Test(name, recycled_index_does_not_inherit_a_name)
{
    kr_world_t *w = make_world();
    kr_entity_t a = named(w, "Ghost");
    uint32_t idx = kr_entity_index(a);
    cr_assert_eq(kr_entity_destroy(w, a), KR_OK);
    kr_entity_t b = kr_entity_create(w);
    cr_assert_eq(kr_entity_index(b), idx, "test assumes the freed index is reused");
    cr_assert_neq(b, a);
    cr_assert_null(kr_entity_name(w, b));
    cr_assert_eq(kr_entity_find(w, "Ghost"), KR_ENTITY_INVALID);
    /* Giving the recycled entity a name works from scratch. */
    set_name(w, b, "Alive");
    cr_assert_eq(kr_entity_find(w, "Alive"), b);
    cr_assert_null(kr_entity_name(w, a)); /* the old id stays stale */
    drop_world(w);
}

Test(name, duplicate_holder_recycled_slot_does_not_rejoin)
{
    kr_world_t *w = make_world();
    kr_entity_t a = named(w, "Pair"), b = named(w, "Pair");
    cr_assert_eq(kr_entity_destroy(w, b), KR_OK);
    kr_entity_t c = kr_entity_create(w); /* likely b's slot */
    cr_assert_null(kr_entity_name(w, c));
    cr_assert_eq(kr_entity_destroy(w, a), KR_OK);
    cr_assert_eq(kr_entity_find(w, "Pair"), KR_ENTITY_INVALID);
    drop_world(w);
}

/* ---- many names -------------------------------------------------------- */

#define MANY 100000

Test(name, many_names, .timeout = 60)
{
    kr_world_t *w = make_world();
    static kr_entity_t e[MANY];
    char buf[32];
    for (int i = 0; i < MANY; i++) {
        snprintf(buf, sizeof buf, "entity-%d", i);
        e[i] = named(w, buf);
    }
    for (int i = 0; i < MANY; i++) {
        snprintf(buf, sizeof buf, "entity-%d", i);
        cr_assert_eq(kr_entity_find(w, buf), e[i], "lookup %d", i);
        cr_assert_str_eq(kr_entity_name(w, e[i]), buf);
    }
    cr_assert_eq(kr_entity_find(w, "entity-100000"), KR_ENTITY_INVALID);
    /* Remove every third name (destroy or rename), then look again. */
    for (int i = 0; i < MANY; i += 3) {
        if (i % 2) {
            cr_assert_eq(kr_entity_destroy(w, e[i]), KR_OK);
        } else {
            snprintf(buf, sizeof buf, "renamed-%d", i);
            set_name(w, e[i], buf);
        }
    }
    for (int i = 0; i < MANY; i++) {
        snprintf(buf, sizeof buf, "entity-%d", i);
        kr_entity_t want = i % 3 ? e[i] : KR_ENTITY_INVALID;
        cr_assert_eq(kr_entity_find(w, buf), want, "after removals, lookup %d", i);
        if (i % 3 == 0 && i % 2 == 0) {
            snprintf(buf, sizeof buf, "renamed-%d", i);
            cr_assert_eq(kr_entity_find(w, buf), e[i]);
        }
    }
    /* Many holders of one name: find walks them oldest first. */
    for (int i = 1; i < MANY; i += 3) set_name(w, e[i], "shared");
    for (int i = 1; i < 3000; i += 3) {
        cr_assert_eq(kr_entity_find(w, "shared"), e[i]);
        cr_assert_eq(kr_entity_destroy(w, e[i]), KR_OK);
    }
    drop_world(w);
}

/* ---- bad arguments ----------------------------------------------------- */

Test(name, null_and_stale_arguments)
{
    kr_world_t *w = make_world();
    kr_entity_t a = named(w, "Live");
    kr_entity_t dead = named(w, "Dead");
    cr_assert_eq(kr_entity_destroy(w, dead), KR_OK);

    kr_clear_error();
    cr_assert_eq(kr_entity_set_name(w, dead, "Zombie"), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_last_status(), KR_ERR_STALE_ENTITY);
    cr_assert_str_neq(kr_last_error(), "");
    cr_assert_eq(kr_entity_find(w, "Zombie"), KR_ENTITY_INVALID);
    cr_assert_eq(kr_entity_set_name(w, KR_ENTITY_INVALID, "Nobody"), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_entity_set_name(w, kr_entity_make(999999, 1), "Far"), KR_ERR_STALE_ENTITY);
    cr_assert_eq(kr_entity_find(w, "Nobody"), KR_ENTITY_INVALID);

    kr_clear_error();
    cr_assert_null(kr_entity_name(w, dead));
    cr_assert_eq(kr_last_status(), KR_ERR_STALE_ENTITY);
    cr_assert_null(kr_entity_name(w, KR_ENTITY_INVALID));

    kr_clear_error();
    cr_assert_eq(kr_entity_find(w, NULL), KR_ENTITY_INVALID);
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    kr_clear_error();
    cr_assert_eq(kr_entity_find(NULL, "Live"), KR_ENTITY_INVALID);
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    kr_clear_error();
    cr_assert_neq(kr_entity_set_name(NULL, a, "X"), KR_OK);
    cr_assert_neq(kr_last_status(), KR_OK);
    cr_assert_null(kr_entity_name(NULL, a));

    /* None of it touched the live name. */
    cr_assert_eq(kr_entity_find(w, "Live"), a);
    cr_assert_str_eq(kr_entity_name(w, a), "Live");
    drop_world(w);
}

/* Names in different worlds are independent. */
Test(name, worlds_do_not_share_names)
{
    kr_world_t *w1 = make_world(), *w2 = make_world();
    kr_entity_t a = named(w1, "Same");
    cr_assert_eq(kr_entity_find(w2, "Same"), KR_ENTITY_INVALID);
    kr_entity_t b = named(w2, "Same");
    cr_assert_eq(kr_entity_find(w1, "Same"), a);
    cr_assert_eq(kr_entity_find(w2, "Same"), b);
    drop_world(w1);
    cr_assert_eq(kr_entity_find(w2, "Same"), b);
    drop_world(w2);
}
