/* Keyed Philox streams: known answers against Random123 itself, keys that
 * differ give different numbers, save/restore at every position, refusal of
 * corrupt states, reset = create, and GSL drawing through the stream. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include <Random123/philox.h>
#include <gsl/gsl_randist.h>

#include "kairos/rng.h"
#include "kairos/status.h"

static philox4x64_ctr_t block(uint64_t seed, uint64_t domain, uint64_t id, uint64_t extra, uint64_t i)
{
    philox4x64_ctr_t c = {{i, domain, extra, 0}};
    philox4x64_key_t k = {{seed, id}};
    return philox4x64(c, k);
}

static kr_rng_t *make(uint64_t seed, kr_rng_domain_t domain, uint64_t id, uint64_t extra)
{
    kr_rng_t *r = kr_rng_create(seed, domain, id, extra);
    cr_assert_not_null(r, "create: %s", kr_last_error());
    return r;
}

Test(rng, known_answer_u64)
{
    kr_rng_t *r = make(42, KR_RNG_SIMULATOR, 7, 0);
    for (uint64_t i = 0; i < 3; i++) {
        philox4x64_ctr_t b = block(42, KR_RNG_SIMULATOR, 7, 0, i);
        for (int j = 0; j < 4; j++) {
            uint64_t got = kr_rng_u64(r);
            cr_assert_eq(got, b.v[j], "block %llu word %d: 0x%016llx, want 0x%016llx",
                         (unsigned long long)i, j, (unsigned long long)got, (unsigned long long)b.v[j]);
        }
    }
    kr_rng_destroy(r);
}

Test(rng, known_answer_gsl_get)
{
    kr_rng_t *r = make(0xdeadbeef, KR_RNG_AGENT, 123456789, 99);
    gsl_rng *g = kr_rng_gsl(r);
    cr_assert_str_eq(gsl_rng_name(g), "kairos-philox");
    cr_assert_eq(gsl_rng_max(g), 0xffffffffUL);
    cr_assert_eq(gsl_rng_min(g), 0);
    for (uint64_t i = 0; i < 2; i++) {
        philox4x64_ctr_t b = block(0xdeadbeef, KR_RNG_AGENT, 123456789, 99, i);
        for (int j = 0; j < 4; j++) {
            cr_assert_eq(gsl_rng_get(g), (unsigned long)(uint32_t)b.v[j]);
            cr_assert_eq(gsl_rng_get(g), (unsigned long)(b.v[j] >> 32));
        }
    }
    /* Uniforms are the top 53 bits of a word. */
    philox4x64_ctr_t b = block(0xdeadbeef, KR_RNG_AGENT, 123456789, 99, 2);
    cr_assert_eq(kr_rng_uniform(r), (double)(b.v[0] >> 11) * 0x1p-53);
    cr_assert_eq(gsl_rng_uniform(g), (double)(b.v[1] >> 11) * 0x1p-53);
    kr_rng_destroy(r);
}

Test(rng, odd_position_u64_spans_halves)
{
    kr_rng_t *r = make(1, KR_RNG_SIMULATOR, 2, 0);
    philox4x64_ctr_t b0 = block(1, KR_RNG_SIMULATOR, 2, 0, 0), b1 = block(1, KR_RNG_SIMULATOR, 2, 0, 1);
    gsl_rng_get(kr_rng_gsl(r));
    uint64_t want = (b0.v[0] >> 32) | (b0.v[1] << 32);
    cr_assert_eq(kr_rng_u64(r), want);
    kr_rng_u64(r);
    kr_rng_u64(r); /* now at the last half of block 0 */
    want = (b0.v[3] >> 32) | (b1.v[0] << 32);
    cr_assert_eq(kr_rng_u64(r), want);
    kr_rng_destroy(r);
}

static void first_words(uint64_t seed, kr_rng_domain_t d, uint64_t id, uint64_t extra, uint64_t out[16])
{
    kr_rng_t *r = make(seed, d, id, extra);
    for (int i = 0; i < 16; i++) out[i] = kr_rng_u64(r);
    kr_rng_destroy(r);
}

Test(rng, keys_differ_and_repeat)
{
    uint64_t base[16], other[16];
    first_words(5, KR_RNG_SIMULATOR, 3, 0, base);
    first_words(5, KR_RNG_SIMULATOR, 3, 0, other);
    cr_assert_eq(memcmp(base, other, sizeof base), 0, "the same key gave different numbers");

    const struct { uint64_t seed; kr_rng_domain_t d; uint64_t id, extra; } keys[] = {
        {6, KR_RNG_SIMULATOR, 3, 0}, /* seed */
        {5, KR_RNG_AGENT, 3, 0},     /* domain */
        {5, KR_RNG_SIMULATOR, 4, 0}, /* id */
        {5, KR_RNG_SIMULATOR, 3, 1}, /* extra */
        {3, KR_RNG_SIMULATOR, 5, 0}, /* seed and id swapped */
    };
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        first_words(keys[k].seed, keys[k].d, keys[k].id, keys[k].extra, other);
        for (int i = 0; i < 16; i++)
            for (int j = 0; j < 16; j++)
                cr_assert_neq(base[i], other[j], "key %zu shares a word with the base stream", k);
    }
}

Test(rng, domains_never_share_blocks)
{
    /* Same seed and id: the two domains use disjoint counters, so even
     * shifted windows of the streams share no word. */
    enum { N = 64 };
    uint64_t a[N], b[N];
    kr_rng_t *ra = make(9, KR_RNG_SIMULATOR, 1, 0), *rb = make(9, KR_RNG_AGENT, 1, 0);
    for (int i = 0; i < N; i++) { a[i] = kr_rng_u64(ra); b[i] = kr_rng_u64(rb); }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) cr_assert_neq(a[i], b[j]);
    kr_rng_destroy(ra);
    kr_rng_destroy(rb);
}

Test(rng, bad_domain_refused)
{
    kr_clear_error();
    cr_assert_null(kr_rng_create(1, (kr_rng_domain_t)0, 1, 0));
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "domain"));
    cr_assert_null(kr_rng_create(1, (kr_rng_domain_t)3, 1, 0));

    kr_rng_t *r = make(1, KR_RNG_AGENT, 1, 0);
    uint64_t want = block(1, KR_RNG_AGENT, 1, 0, 0).v[0];
    cr_assert_eq(kr_rng_reset(r, 2, (kr_rng_domain_t)7, 2, 0), KR_ERR_INVALID_ARG);
    cr_assert_eq(kr_rng_u64(r), want, "a refused reset changed the stream");
    kr_rng_destroy(r);
    kr_rng_destroy(NULL);
}

Test(rng, reset_equals_create)
{
    kr_rng_t *r = make(1, KR_RNG_SIMULATOR, 1, 0);
    for (int i = 0; i < 13; i++) gsl_rng_get(kr_rng_gsl(r)); /* mid-block, odd half */
    for (uint64_t agent = 0; agent < 20; agent++) {
        cr_assert_eq(kr_rng_reset(r, 77, KR_RNG_AGENT, agent, 1000 + agent), KR_OK);
        kr_rng_t *fresh = make(77, KR_RNG_AGENT, agent, 1000 + agent);
        for (int i = 0; i < 11; i++) cr_assert_eq(kr_rng_u64(r), kr_rng_u64(fresh));
        kr_rng_destroy(fresh);
        gsl_rng_get(kr_rng_gsl(r));
    }
    kr_rng_destroy(r);
}

Test(rng, gsl_set_rekeys_seed_only)
{
    kr_rng_t *r = make(1, KR_RNG_AGENT, 8, 3);
    kr_rng_u64(r);
    gsl_rng_set(kr_rng_gsl(r), 55);
    kr_rng_t *fresh = make(55, KR_RNG_AGENT, 8, 3);
    for (int i = 0; i < 9; i++) cr_assert_eq(kr_rng_u64(r), kr_rng_u64(fresh));
    kr_rng_destroy(fresh);
    kr_rng_destroy(r);
}

Test(rng, save_restore_every_position)
{
    /* Positions 0..20 in 32-bit draws: block edges and odd halves. */
    for (int pos = 0; pos <= 20; pos++) {
        kr_rng_t *r = make(31337, KR_RNG_SIMULATOR, 12, 0);
        for (int i = 0; i < pos; i++) gsl_rng_get(kr_rng_gsl(r));
        kr_rng_state_t st;
        kr_rng_save(r, &st);
        uint64_t want[10];
        for (int i = 0; i < 10; i++) want[i] = kr_rng_u64(r);

        /* Into a stream with a different key and position. */
        kr_rng_t *other = make(1, KR_RNG_AGENT, 2, 3);
        for (int i = 0; i < 5; i++) gsl_rng_get(kr_rng_gsl(other));
        cr_assert_eq(kr_rng_restore(other, &st), KR_OK, "pos %d: %s", pos, kr_last_error());
        for (int i = 0; i < 10; i++) cr_assert_eq(kr_rng_u64(other), want[i], "pos %d draw %d", pos, i);
        /* And back into the original, which rewinds it. */
        cr_assert_eq(kr_rng_restore(r, &st), KR_OK);
        for (int i = 0; i < 10; i++) cr_assert_eq(kr_rng_u64(r), want[i]);
        kr_rng_destroy(other);
        kr_rng_destroy(r);
    }
}

Test(rng, save_restore_after_uniforms_and_gaussians)
{
    kr_rng_t *r = make(4, KR_RNG_AGENT, 40, 400);
    gsl_rng *g = kr_rng_gsl(r);
    for (int i = 0; i < 7; i++) gsl_ran_gaussian(g, 1.0); /* rejection: a data-dependent count */
    gsl_rng_get(g);
    kr_rng_state_t st;
    kr_rng_save(r, &st);
    double want[8];
    for (int i = 0; i < 8; i++) want[i] = gsl_ran_gamma(g, 2.5, 1.0);
    kr_rng_t *copy = make(0, KR_RNG_SIMULATOR, 0, 0);
    cr_assert_eq(kr_rng_restore(copy, &st), KR_OK);
    for (int i = 0; i < 8; i++) cr_assert_eq(gsl_ran_gamma(kr_rng_gsl(copy), 2.5, 1.0), want[i]);
    kr_rng_destroy(copy);
    kr_rng_destroy(r);
}

Test(rng, corrupt_state_refused)
{
    kr_rng_t *r = make(8, KR_RNG_SIMULATOR, 8, 0);
    for (int i = 0; i < 3; i++) gsl_rng_get(kr_rng_gsl(r));
    kr_rng_state_t good;
    kr_rng_save(r, &good);
    uint64_t next = kr_rng_u64(r);
    cr_assert_eq(kr_rng_restore(r, &good), KR_OK);

    /* Any single flipped bit is caught. */
    for (int w = 0; w < KR_RNG_STATE_WORDS; w++)
        for (int bit = 0; bit < 64; bit += 7) {
            kr_rng_state_t bad = good;
            bad.words[w] ^= UINT64_C(1) << bit;
            kr_clear_error();
            cr_assert_eq(kr_rng_restore(r, &bad), KR_ERR_CORRUPT, "word %d bit %d accepted", w, bit);
            cr_assert_neq(kr_last_error()[0], '\0');
        }
    kr_rng_state_t zero;
    memset(&zero, 0, sizeof zero);
    cr_assert_eq(kr_rng_restore(r, &zero), KR_ERR_CORRUPT);
    cr_assert_eq(kr_rng_restore(r, NULL), KR_ERR_INVALID_ARG);
    /* Refusals left the stream where it was. */
    cr_assert_eq(kr_rng_u64(r), next);
    kr_rng_destroy(r);
}

Test(rng, uniform_range_and_moments)
{
    kr_rng_t *r = make(2024, KR_RNG_SIMULATOR, 0, 0);
    enum { N = 200000 };
    double sum = 0, sum2 = 0;
    int bins[10] = {0};
    for (int i = 0; i < N; i++) {
        double u = kr_rng_uniform(r);
        cr_assert(u >= 0.0 && u < 1.0, "uniform %a out of [0, 1)", u);
        sum += u;
        sum2 += u * u;
        bins[(int)(u * 10)]++;
    }
    double mean = sum / N, var = sum2 / N - mean * mean;
    cr_assert_lt(fabs(mean - 0.5), 5 * sqrt(1.0 / 12 / N), "mean %g", mean);
    cr_assert_lt(fabs(var - 1.0 / 12), 5 * sqrt(1.0 / 180 / N), "variance %g", var);
    for (int b = 0; b < 10; b++) /* binomial(N, 0.1): sd 134 */
        cr_assert_lt(abs(bins[b] - N / 10), 700, "bin %d holds %d", b, bins[b]);
    kr_rng_destroy(r);
}

Test(rng, gsl_distributions_work)
{
    kr_rng_t *r = make(11, KR_RNG_AGENT, 5, 0);
    gsl_rng *g = kr_rng_gsl(r);
    enum { N = 100000 };
    double s_exp = 0, s_gauss = 0, s_gauss2 = 0;
    unsigned long s_int = 0;
    for (int i = 0; i < N; i++) {
        s_exp += gsl_ran_exponential(g, 2.0);
        double z = gsl_ran_gaussian_ziggurat(g, 3.0);
        s_gauss += z;
        s_gauss2 += z * z;
        unsigned long k = gsl_rng_uniform_int(g, 6);
        cr_assert_lt(k, 6);
        s_int += k;
        double p = gsl_rng_uniform_pos(g);
        cr_assert(p > 0 && p < 1);
    }
    cr_assert_lt(fabs(s_exp / N - 2.0), 5 * 2.0 / sqrt(N));
    cr_assert_lt(fabs(s_gauss / N), 5 * 3.0 / sqrt(N));
    cr_assert_lt(fabs(s_gauss2 / N - 9.0), 5 * 9.0 * sqrt(2.0 / N));
    cr_assert_lt(fabs((double)s_int / N - 2.5), 5 * sqrt(35.0 / 12 / N));

    /* A clone is an independent copy at the same position. */
    gsl_rng *c = gsl_rng_clone(g);
    for (int i = 0; i < 9; i++) cr_assert_eq(gsl_rng_get(c), gsl_rng_get(g));
    gsl_rng_free(c);
    kr_rng_destroy(r);
}
