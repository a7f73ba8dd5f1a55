/* Fuzz target: one simulator's part of a checkpoint as the restart loads
 * it, after the container (fuzz_checkpoint) has checked and decompressed
 * it: kr__run_load_part (runtime/checkpoint.c), i.e. the scheduler part
 * (kr__sim_checkpoint_load, schedulers/checkpoint.c: events, stream,
 * declared state, statistics, the world image of ecs/image.c, a
 * continuous simulator's state) and then the kind's own part through its
 * serialize callback and its restore. Any bytes must load or fail with
 * one clean error (a status and a message), never a crash, a leak or a
 * hang. A part that loads is saved again (kr__sim_checkpoint_save walks
 * everything the load built) and the model then runs to its end time, as
 * a restart would (the other simulators from their setup): what the
 * loader accepts must be a state the run can go on from. Not walkers: its
 * regions restored one at a time, the others fresh, disagree about their
 * halo exchanges at the first step (a clean error, but UBSan stops at
 * regions/exchange.c's null + 0 on the way, reported separately), and
 * that state is no restart's.
 *
 * Input: byte 0 picks the model (mod MODELS), byte 1 the simulator (mod
 * its count), the rest is the part. Each input gets a freshly built model
 * (a failed load leaves its simulator fit only to be destroyed). The
 * models: a small PHOLD (2 simulators), the SQSS line, the factory (a
 * discrete, an agent-based and a continuous simulator) and a small
 * walkers world (ECS entities, spatial hash, behaviors).
 *
 * KAIROS_FUZZ_SEEDS=DIR: writes the seeds (every simulator's real part of
 * each model cut at CUT) to DIR and exits (tests/fuzz/make-corpus.sh).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kairos/kairos.h"
#include "ecs/serializer_private.h"
#include "models/builtin.h"
#include "net/transport.h"
#include "runtime/model_file.h"
#include "runtime/run_private.h"
#include "schedulers/checkpoint.h"
#include "schedulers/model_private.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct model {
    const char *name, *text;
    double cut; /* model units, for the seeds */
    bool run;   /* run on after a load (below) */
    kr__model_file_t *file;
} model_t;

static model_t models[] = {
    { "phold", "{\"seed\": 1, \"end_time\": 20, \"simulators\": [{\"name\": \"phold\", \"kind\": \"phold\", "
               "\"formalism\": \"discrete_event\", \"count\": 2, \"params\": {\"lps\": 8, \"start_events\": 2, "
               "\"remote\": 0.25, \"lookahead\": 0.1, \"mean\": 1.0}}], \"dependencies\": [{\"from\": "
               "\"phold[*]\", \"to\": \"phold[*]\", \"promise\": 0.1}]}",
      5, true, NULL },
    { "sqss", "{\"precision\": 1000000, \"seed\": 1, \"end_time\": 600, \"simulators\": [{\"name\": \"line\", "
              "\"kind\": \"sqss\", \"params\": {\"arrival\": {\"dist\": \"constant\", \"value\": 5}, \"service\": "
              "{\"dist\": \"uniform\", \"min\": 9, \"max\": 11}, \"capacity\": 5, \"servers\": 1, "
              "\"first_arrival\": 5}}]}",
      300, true, NULL },
    { "factory", "{\"precision\": 1000000, \"seed\": 1, \"end_time\": 120, \"simulators\": ["
                 "{\"name\": \"AssemblyLine\", \"kind\": \"assembly\", \"params\": {\"to\": \"TransportRobots\", "
                 "\"interval\": {\"dist\": \"exponential\", \"mean\": 2}}},"
                 "{\"name\": \"TransportRobots\", \"kind\": \"robots\", \"formalism\": \"agent-based\", "
                 "\"time_step\": 1, \"params\": {\"to\": \"ChemicalBath\", \"robots\": 8, \"path_length\": 10, "
                 "\"speed\": 2}},"
                 "{\"name\": \"ChemicalBath\", \"kind\": \"bath\", \"formalism\": \"continuous\", \"time_step\": 2, "
                 "\"params\": {\"capacity\": 8, \"initial\": 80, \"target\": 60}}],"
                 "\"dependencies\": [{\"from\": \"AssemblyLine\", \"to\": \"TransportRobots\", \"promise\": 0},"
                 "{\"from\": \"TransportRobots\", \"to\": \"ChemicalBath\", \"promise\": 2}]}",
      101, true, NULL },
    /* examples/walkers.json made small, as make-corpus.sh's walkers-small */
    { "walkers", "{\"seed\": 7, \"end_time\": 10, \"simulators\": [{\"name\": \"walkers\", \"kind\": "
                 "\"walkers\", \"formalism\": \"agent-based\", \"time_step\": 1, \"regions\": [2, 2], "
                 "\"params\": {\"width\": 20, \"height\": 10, \"agents\": 300, \"halo\": 1}}]}",
      5, false, NULL },
};
#define MODELS (sizeof models / sizeof *models)

static char tmpdir[64];

static void cleanup(void)
{
    for (size_t i = 0; i < MODELS; i++)
        if (models[i].file) kr__model_file_free(models[i].file);
    rmdir(tmpdir);
}

static kr__model_file_t *load(const model_t *mo)
{
    char path[192];
    snprintf(path, sizeof path, "%s/%s.json", tmpdir, mo->name);
    FILE *fp = fopen(path, "w");
    if (!fp || fputs(mo->text, fp) < 0 || fclose(fp)) abort();
    kr__model_file_t *f = kr__model_file_load(&(kr__model_file_desc_t){
        .path = path, .register_builtin = kr__models_register_builtin });
    unlink(path);
    if (!f) {
        fprintf(stderr, "fuzz_checkpoint_part: %s: %s\n", mo->name, kr_last_error());
        abort();
    }
    return f;
}

/* A simulator's part as runtime/checkpoint.c's save_sim writes it. */
static void save_part(model_t *mo, kr_model_t *m, uint32_t i, kr_buf_t *b)
{
    kr_sim_t *s = kr_model_sim(m, i);
    size_t at = b->len;
    kr_buf_put_u64(b, 0);
    if (kr__sim_checkpoint_save(s, b)) {
        fprintf(stderr, "fuzz_checkpoint_part: saving %s: %s\n", kr_sim_name(s), kr_last_error());
        abort();
    }
    uint64_t len = b->len - at - 8;
    memcpy(b->data + at, &len, 8);
    const kr_kind_desc_t *k = kr__model_file_kind(mo->file, i);
    at = b->len;
    kr_buf_put_u64(b, 0);
    if (k && k->serialize) {
        kr_serializer_t ser;
        kr__serializer_checkpoint_saver(&ser, b);
        if (k->serialize(s, &ser) || kr_serializer_status(&ser)) {
            fprintf(stderr, "fuzz_checkpoint_part: saving %s's kind part: %s\n", kr_sim_name(s), kr_last_error());
            abort();
        }
    }
    len = b->len - at - 8;
    memcpy(b->data + at, &len, 8);
}

static void make_seeds(const char *dir)
{
    int files = 0;
    for (size_t mi = 0; mi < MODELS; mi++) {
        model_t *mo = &models[mi];
        kr_model_t *m = kr__model_file_build(mo->file, NULL);
        bool at_cut = false;
        kr_time_t cut = 0;
        if (kr_time_from_units(mo->cut, mo->file->precision, &cut)) abort();
        if (!m || kr__model_use_transport(m, kr__transport_local_create()) || kr__coord_run_until(m, cut, &at_cut) ||
            !at_cut) {
            fprintf(stderr, "fuzz_checkpoint_part: %s to its cut: %s\n", mo->name, m ? kr_last_error() : "");
            exit(1);
        }
        for (uint32_t i = 0; i < kr_model_sim_count(m); i++) {
            kr_buf_t b;
            kr_buf_init(&b);
            kr_buf_put_u8(&b, (uint8_t)mi);
            kr_buf_put_u8(&b, (uint8_t)i);
            save_part(mo, m, i, &b);
            char p[512];
            snprintf(p, sizeof p, "%s/%s-%u", dir, mo->name, i);
            FILE *fp = fopen(p, "wb");
            if (!fp || fwrite(b.data, 1, b.len, fp) != b.len || fclose(fp)) exit(1);
            kr_buf_fini(&b);
            files++;
        }
        kr_model_destroy(m);
    }
    printf("fuzz_checkpoint_part: %d seeds\n", files);
    exit(0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    snprintf(tmpdir, sizeof tmpdir, "%s/kairos_fuzz_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(tmpdir)) abort();
    for (size_t i = 0; i < MODELS; i++) models[i].file = load(&models[i]);
    atexit(cleanup);
    const char *seeds = getenv("KAIROS_FUZZ_SEEDS");
    if (seeds) make_seeds(seeds);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2) return -1;
    model_t *mo = &models[data[0] % MODELS];
    kr_model_t *m = kr__model_file_build(mo->file, NULL);
    if (!m) {
        fprintf(stderr, "fuzz_checkpoint_part: %s: %s\n", mo->name, kr_last_error());
        abort();
    }
    uint32_t i = data[1] % (uint32_t)kr_model_sim_count(m);
    kr_sim_t *s = kr_model_sim(m, i);
    /* (the cut only starts an emulation's clock: none here) */
    kr_status_t st = kr__run_load_part(s, kr__model_file_kind(mo->file, i), data + 2, size - 2, kr_model_end_time(m),
                                       kr_model_end_time(m));
    if (st && !kr_last_error()[0]) abort(); /* one clean error */
    if (getenv("KAIROS_FUZZ_VERBOSE"))
        fprintf(stderr, "fuzz_checkpoint_part: %s %s: %s\n", mo->name, kr_sim_name(s), st ? kr_last_error() : "loaded");
    if (!st) {
        /* what loaded saves again */
        kr_buf_t b;
        kr_buf_init(&b);
        if (kr__sim_checkpoint_save(s, &b) && !kr_last_error()[0]) abort();
        kr_buf_fini(&b);
    }
    if (!st && mo->run) {
        /* and the run goes on from it, to the end time (the model's other
         * simulators from their setup): the same clean errors or none */
        st = kr__model_use_transport(m, kr__transport_local_create());
        if (!st) st = kr_model_run(m);
        if (st && !kr_last_error()[0]) abort();
        if (getenv("KAIROS_FUZZ_VERBOSE"))
            fprintf(stderr, "fuzz_checkpoint_part: run: %s\n", st ? kr_last_error() : "finished");
    }
    kr_model_destroy(m);
    return 0;
}
