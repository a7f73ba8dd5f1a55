/* Payloads as JSON (models/gateway/payload_json.c): every field type, the
 * limits of each range, what is refused and why, and the way out
 * (kr__payload_to_json). Also kr_model_event_type's checks of a `fields`
 * table (schedulers/model.c). */
#include <criterion/criterion.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "models/gateway/payload_json.h"

typedef struct all {
    bool b;
    int8_t i8;
    uint8_t u8;
    int16_t i16;
    uint16_t u16;
    int32_t i32;
    uint32_t u32;
    int64_t i64;
    uint64_t u64;
    float f32;
    double f64;
    int16_t a16[3];
    bool flags[2];
    double af64[2];
} all_t;

static const kr_field_t all_fields[] = {
    KR_FIELD(all_t, b, KR_FIELD_BOOL),
    KR_FIELD(all_t, i8, KR_FIELD_I8),
    KR_FIELD(all_t, u8, KR_FIELD_U8),
    KR_FIELD(all_t, i16, KR_FIELD_I16),
    KR_FIELD(all_t, u16, KR_FIELD_U16),
    KR_FIELD(all_t, i32, KR_FIELD_I32),
    KR_FIELD(all_t, u32, KR_FIELD_U32),
    KR_FIELD(all_t, i64, KR_FIELD_I64),
    KR_FIELD(all_t, u64, KR_FIELD_U64),
    KR_FIELD(all_t, f32, KR_FIELD_F32),
    KR_FIELD(all_t, f64, KR_FIELD_F64),
    KR_FIELD_ARRAY(all_t, a16, KR_FIELD_I16, 3),
    KR_FIELD_ARRAY(all_t, flags, KR_FIELD_BOOL, 2),
    KR_FIELD_ARRAY(all_t, af64, KR_FIELD_F64, 2),
    { 0 },
};

static char why[256];

/* Decodes `text` into *out (filled with 0x5a first: decoding must zero
 * it); returns the reason or NULL. */
static const char *decode(const char *text, all_t *out)
{
    json_error_t err;
    json_t *j = json_loads(text, JSON_DECODE_ANY, &err);
    cr_assert(j, "bad test JSON %s: %s", text, err.text);
    memset(out, 0x5a, sizeof *out);
    why[0] = 0;
    const char *bad = kr__payload_from_json(all_fields, sizeof *out, j, out, why, sizeof why);
    json_decref(j);
    if (bad) cr_assert_eq(bad, why);
    return bad;
}

static void accepts(const char *text, all_t *out)
{
    const char *bad = decode(text, out);
    cr_assert_null(bad, "%s refused: %s", text, bad);
}

static void refuses(const char *text, const char *reason)
{
    all_t out;
    const char *bad = decode(text, &out);
    cr_assert_not_null(bad, "%s accepted", text);
    if (reason) cr_assert_str_eq(bad, reason, "%s: %s", text, bad);
}

Test(gateway_payload, every_type)
{
    all_t a;
    accepts("{\"b\": true, \"i8\": -5, \"u8\": 200, \"i16\": -300, \"u16\": 60000, \"i32\": -70000, \"u32\": 3000000000,"
            " \"i64\": -5000000000, \"u64\": 6000000000, \"f32\": 1.5, \"f64\": -2.25, \"a16\": [1, -2, 3],"
            " \"flags\": [false, true], \"af64\": [0.5, 1e300]}", &a);
    cr_assert(a.b);
    cr_assert_eq(a.i8, -5);
    cr_assert_eq(a.u8, 200);
    cr_assert_eq(a.i16, -300);
    cr_assert_eq(a.u16, 60000);
    cr_assert_eq(a.i32, -70000);
    cr_assert_eq(a.u32, 3000000000u);
    cr_assert_eq(a.i64, -5000000000);
    cr_assert_eq(a.u64, 6000000000u);
    cr_assert_eq(a.f32, 1.5f);
    cr_assert_eq(a.f64, -2.25);
    cr_assert(a.a16[0] == 1 && a.a16[1] == -2 && a.a16[2] == 3);
    cr_assert(!a.flags[0] && a.flags[1]);
    cr_assert(a.af64[0] == 0.5 && a.af64[1] == 1e300);
}

Test(gateway_payload, absent_fields_are_zero)
{
    all_t a, zero;
    memset(&zero, 0, sizeof zero);
    accepts("{\"i8\": 3}", &a);
    cr_assert_eq(a.i8, 3);
    a.i8 = 0;
    cr_assert_eq(memcmp(&a, &zero, sizeof a), 0);
    accepts("{}", &a);
    cr_assert_eq(memcmp(&a, &zero, sizeof a), 0);
    accepts("null", &a);
    cr_assert_eq(memcmp(&a, &zero, sizeof a), 0);
    /* no data at all (a NULL json_t) */
    memset(&a, 0x5a, sizeof a);
    cr_assert_null(kr__payload_from_json(all_fields, sizeof a, NULL, &a, why, sizeof why));
    cr_assert_eq(memcmp(&a, &zero, sizeof a), 0);
}

Test(gateway_payload, integer_limits)
{
    all_t a;
    accepts("{\"i8\": -128, \"u8\": 255, \"i16\": -32768, \"u16\": 65535, \"i32\": -2147483648, \"u32\": 4294967295,"
            " \"i64\": -9223372036854775808, \"u64\": 9223372036854775807}", &a);
    cr_assert_eq(a.i8, INT8_MIN);
    cr_assert_eq(a.u8, UINT8_MAX);
    cr_assert_eq(a.i16, INT16_MIN);
    cr_assert_eq(a.u16, UINT16_MAX);
    cr_assert_eq(a.i32, INT32_MIN);
    cr_assert_eq(a.u32, UINT32_MAX);
    cr_assert_eq(a.i64, INT64_MIN);
    cr_assert_eq(a.u64, (uint64_t)INT64_MAX);
    accepts("{\"i8\": 127, \"i16\": 32767, \"i32\": 2147483647, \"i64\": 9223372036854775807}", &a);
    cr_assert_eq(a.i8, INT8_MAX);
    cr_assert_eq(a.i16, INT16_MAX);
    cr_assert_eq(a.i32, INT32_MAX);
    cr_assert_eq(a.i64, INT64_MAX);

    refuses("{\"i8\": 128}", "\"data.i8\" is not a whole number from -128 to 127");
    refuses("{\"i8\": -129}", "\"data.i8\" is not a whole number from -128 to 127");
    refuses("{\"u8\": 256}", "\"data.u8\" is not a whole number from 0 to 255");
    refuses("{\"i16\": 32768}", "\"data.i16\" is not a whole number from -32768 to 32767");
    refuses("{\"u16\": 65536}", "\"data.u16\" is not a whole number from 0 to 65535");
    refuses("{\"i32\": -2147483649}", "\"data.i32\" is not a whole number from -2147483648 to 2147483647");
    refuses("{\"u32\": 4294967296}", "\"data.u32\" is not a whole number from 0 to 4294967295");
}

Test(gateway_payload, negative_into_unsigned)
{
    refuses("{\"u8\": -1}", "\"data.u8\" is not a whole number from 0 to 255");
    refuses("{\"u16\": -1}", NULL);
    refuses("{\"u32\": -1}", NULL);
    refuses("{\"u64\": -1}", "\"data.u64\" is not a whole number >= 0");
    refuses("{\"u64\": -1.0}", "\"data.u64\" is not a whole number >= 0");
    refuses("{\"u64\": -9223372036854775808}", NULL);
}

/* JSON integers are signed 64-bit here (jansson): a u64 above INT64_MAX
 * comes in as a real, exact when it is a double. */
Test(gateway_payload, u64_above_int64_max)
{
    all_t a;
    accepts("{\"u64\": 9223372036854775808.0}", &a);
    cr_assert_eq(a.u64, (uint64_t)1 << 63);
    accepts("{\"u64\": 1.8446744073709550e19}", &a);
    cr_assert_eq(a.u64, 18446744073709549568u);
    refuses("{\"u64\": 1.8446744073709552e19}", "\"data.u64\" is not a whole number >= 0"); /* 2^64 */
    /* and as an integer it does not even parse */
    json_error_t err;
    json_t *j = json_loads("{\"u64\": 18446744073709551615}", 0, &err);
    cr_assert_null(j);
}

Test(gateway_payload, reals_into_integers)
{
    all_t a;
    accepts("{\"i8\": -128.0, \"u32\": 4294967295.0, \"i64\": 1e15, \"i16\": -0.0}", &a);
    cr_assert_eq(a.i8, -128);
    cr_assert_eq(a.u32, UINT32_MAX);
    cr_assert_eq(a.i64, 1000000000000000);
    cr_assert_eq(a.i16, 0);
    refuses("{\"i8\": 1.5}", "\"data.i8\" is not a whole number from -128 to 127");
    refuses("{\"u32\": 0.1}", NULL);
    refuses("{\"i64\": -2.5}", "\"data.i64\" is not a whole number");
    refuses("{\"u64\": 1e-300}", NULL);
    refuses("{\"i8\": 128.0}", NULL);
    refuses("{\"i64\": 9.3e18}", "\"data.i64\" is not a whole number");
    refuses("{\"i64\": 9223372036854775808.0}", NULL);
    accepts("{\"i64\": -9223372036854775808.0}", &a);
    cr_assert_eq(a.i64, INT64_MIN);
}

Test(gateway_payload, booleans_strict)
{
    all_t a;
    accepts("{\"b\": false}", &a);
    cr_assert(!a.b);
    refuses("{\"b\": 1}", "\"data.b\" is not true or false");
    refuses("{\"b\": 0}", NULL);
    refuses("{\"b\": \"true\"}", NULL);
    refuses("{\"b\": null}", NULL);
    refuses("{\"i8\": true}", "\"data.i8\" is not a whole number from -128 to 127");
    refuses("{\"f64\": false}", "\"data.f64\" is not a number");
    refuses("{\"flags\": [true, 1]}", "\"data.flags\" is not an array of 2 values, each true or false");
}

Test(gateway_payload, reals)
{
    all_t a;
    accepts("{\"f32\": 3.4028234663852886e38, \"f64\": 1.7976931348623157e308}", &a);
    cr_assert_eq(a.f32, FLT_MAX);
    cr_assert_eq(a.f64, DBL_MAX);
    accepts("{\"f32\": -3.4028234663852886e38, \"f64\": 7}", &a);
    cr_assert_eq(a.f32, -FLT_MAX);
    cr_assert_eq(a.f64, 7.0);
    refuses("{\"f32\": 3.5e38}", "\"data.f32\" is not a number");
    refuses("{\"f32\": -1e39}", NULL);
    refuses("{\"f64\": \"1\"}", "\"data.f64\" is not a number");
    refuses("{\"f64\": null}", NULL);
}

Test(gateway_payload, arrays_exact_length)
{
    all_t a;
    accepts("{\"a16\": [-32768, 0, 32767]}", &a);
    cr_assert(a.a16[0] == INT16_MIN && a.a16[2] == INT16_MAX);
    const char *why16 = "\"data.a16\" is not an array of 3 values, each a whole number from -32768 to 32767";
    refuses("{\"a16\": [1, 2]}", why16);
    refuses("{\"a16\": [1, 2, 3, 4]}", why16);
    refuses("{\"a16\": []}", why16);
    refuses("{\"a16\": 1}", why16);
    refuses("{\"a16\": [1, 2, 32768]}", why16);
    refuses("{\"a16\": [1, 2, 0.5]}", why16);
    refuses("{\"af64\": [1, null]}", "\"data.af64\" is not an array of 2 values, each a number");
    /* a scalar field is not an array of one */
    refuses("{\"i8\": [1]}", "\"data.i8\" is not a whole number from -128 to 127");
}

Test(gateway_payload, unknown_keys_and_non_objects)
{
    refuses("{\"i8\": 1, \"nosuch\": 2}", "\"data\" has the unknown field \"nosuch\"");
    refuses("{\"I8\": 1}", "\"data\" has the unknown field \"I8\"");
    refuses("3", "\"data\" is not an object of the event's fields");
    refuses("[1, 2]", "\"data\" is not an object of the event's fields");
    refuses("\"x\"", "\"data\" is not an object of the event's fields");
    refuses("true", "\"data\" is not an object of the event's fields");
    /* a type without fields takes no keys, but null or {} */
    char payload[4];
    json_t *j = json_pack("{s:i}", "x", 1);
    cr_assert_not_null(kr__payload_from_json(NULL, sizeof payload, j, payload, why, sizeof why));
    cr_assert_str_eq(why, "\"data\" has the unknown field \"x\"");
    json_decref(j);
    j = json_object();
    cr_assert_null(kr__payload_from_json(NULL, 0, j, NULL, why, sizeof why));
    json_decref(j);
    /* the reason is cut to the buffer it is given */
    all_t a;
    j = json_pack("{s:i}", "nosuch", 1);
    char small[8];
    cr_assert_eq(kr__payload_from_json(all_fields, sizeof a, j, &a, small, sizeof small), small);
    cr_assert_eq(strlen(small), sizeof small - 1);
    json_decref(j);
}

static json_t *encode(const all_t *a)
{
    json_t *j = kr__payload_to_json(all_fields, a);
    cr_assert_not_null(j);
    return j;
}

static void round_trip(const all_t *a)
{
    json_t *j = encode(a);
    char *text = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    all_t back;
    const char *bad = decode(text, &back);
    cr_assert_null(bad, "%s refused: %s", text, bad);
    cr_assert_eq(memcmp(a, &back, sizeof back), 0, "%s does not give the same bytes", text);
    free(text);
}

Test(gateway_payload, round_trip)
{
    all_t a;
    memset(&a, 0, sizeof a); /* the padding too: compared bytewise */
    round_trip(&a);
    a.b = true;
    a.i8 = INT8_MIN;
    a.u8 = UINT8_MAX;
    a.i16 = INT16_MIN;
    a.u16 = UINT16_MAX;
    a.i32 = INT32_MIN;
    a.u32 = UINT32_MAX;
    a.i64 = INT64_MIN;
    a.u64 = (uint64_t)INT64_MAX;
    a.f32 = 0.1f;
    a.f64 = -1.0 / 3.0;
    a.a16[0] = -1;
    a.a16[1] = INT16_MAX;
    a.flags[1] = true;
    a.af64[0] = DBL_MIN;
    a.af64[1] = -DBL_MAX;
    round_trip(&a);
    a.u64 = (uint64_t)1 << 63; /* above INT64_MAX: out as a real, exact here */
    a.f32 = FLT_MAX;
    a.i64 = INT64_MAX;
    round_trip(&a);
}

Test(gateway_payload, to_json_values)
{
    all_t a;
    memset(&a, 0, sizeof a);
    a.i8 = -7;
    a.u64 = UINT64_MAX;
    a.flags[0] = true;
    json_t *j = encode(&a);
    cr_assert_eq(json_object_size(j), 14);
    cr_assert(json_is_integer(json_object_get(j, "i8")));
    cr_assert_eq(json_integer_value(json_object_get(j, "i8")), -7);
    cr_assert(json_is_false(json_object_get(j, "b")));
    cr_assert(json_is_real(json_object_get(j, "u64")));
    cr_assert_eq(json_real_value(json_object_get(j, "u64")), 18446744073709551616.0);
    json_t *flags = json_object_get(j, "flags");
    cr_assert(json_is_array(flags) && json_array_size(flags) == 2);
    cr_assert(json_is_true(json_array_get(flags, 0)) && json_is_false(json_array_get(flags, 1)));
    cr_assert_eq(json_array_size(json_object_get(j, "a16")), 3);
    json_decref(j);
    /* no fields: an empty object */
    j = kr__payload_to_json(NULL, NULL);
    cr_assert(json_is_object(j) && json_object_size(j) == 0);
    json_decref(j);
}

Test(gateway_payload, non_finite_out_as_null)
{
    all_t a;
    memset(&a, 0, sizeof a);
    a.f32 = INFINITY;
    a.f64 = NAN;
    a.af64[0] = -INFINITY;
    a.af64[1] = 2.5;
    json_t *j = encode(&a);
    cr_assert(json_is_null(json_object_get(j, "f32")));
    cr_assert(json_is_null(json_object_get(j, "f64")));
    json_t *af = json_object_get(j, "af64");
    cr_assert(json_is_null(json_array_get(af, 0)));
    cr_assert_eq(json_real_value(json_array_get(af, 1)), 2.5);
    /* the line can be written and read as JSON */
    char *text = json_dumps(j, JSON_COMPACT);
    cr_assert_not_null(text);
    json_error_t err;
    json_t *back = json_loads(text, 0, &err);
    cr_assert_not_null(back, "%s: %s", text, err.text);
    json_decref(back);
    free(text);
    json_decref(j);
}

/* ---- kr_model_event_type's checks of `fields` ---- */

static void on_target(kr_sim_t *sim, void *data)
{
    (void)sim;
    (void)data;
}

typedef struct two {
    int32_t a;
    float b;
} two_t;

static kr_event_type_t declare(kr_model_t *m, const char *name, size_t size, const kr_field_t *fields)
{
    return kr_model_event_type(m, &(kr_event_type_desc_t){ .name = name, .size = size, .on_target_side = on_target,
                                                           .fields = fields });
}

Test(gateway_payload, event_type_fields_checked)
{
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = 10, .log_level = KR_LOG_OFF });
    cr_assert_not_null(m);
    static const kr_field_t good[] = { KR_FIELD(two_t, a, KR_FIELD_I32), KR_FIELD(two_t, b, KR_FIELD_F32), { 0 } };
    kr_event_type_t t = declare(m, "good", sizeof(two_t), good);
    cr_assert(t);
    cr_assert_eq(kr_model_event_type_fields(m, t), good);

    /* a field past the end of the payload */
    cr_assert_eq(declare(m, "short", sizeof(two_t) - 1, good), 0);
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    cr_assert(strstr(kr_last_error(), "field 'b'"), "%s", kr_last_error());
    static const kr_field_t past[] = { { "x", KR_FIELD_I64, 4, 1 }, { 0 } };
    cr_assert_eq(declare(m, "past", 8, past), 0);
    static const kr_field_t long_array[] = { { "x", KR_FIELD_I16, 0, 5 }, { 0 } };
    cr_assert_eq(declare(m, "long_array", 8, long_array), 0);
    cr_assert(strstr(kr_last_error(), "field 'x'"), "%s", kr_last_error());
    static const kr_field_t exact_array[] = { { "x", KR_FIELD_I16, 0, 4 }, { 0 } };
    cr_assert(declare(m, "exact_array", 8, exact_array));
    /* fields on a payload of size 0 */
    cr_assert_eq(declare(m, "empty", 0, good), 0);

    /* not a number or boolean */
    static const kr_field_t entity[] = { { "e", KR_FIELD_ENTITY, 0, 1 }, { 0 } };
    cr_assert_eq(declare(m, "entity", 16, entity), 0);
    cr_assert_eq(kr_last_status(), KR_ERR_INVALID_ARG);
    static const kr_field_t counter[] = { { "c", KR_FIELD_COUNTER, 0, 1 }, { 0 } };
    cr_assert_eq(declare(m, "counter", 16, counter), 0);
    static const kr_field_t string[] = { { "s", KR_FIELD_STRING, 0, 1 }, { 0 } };
    cr_assert_eq(declare(m, "string", 16, string), 0);
    static const kr_field_t zero_type[] = { { "z", (kr_field_type_t)0, 0, 1 }, { 0 } };
    cr_assert_eq(declare(m, "zero_type", 16, zero_type), 0);
    cr_assert_eq(kr_model_find_event_type(m, "entity"), 0);

    /* the same name again: the same table is the same type, another is refused */
    cr_assert_eq(declare(m, "good", sizeof(two_t), good), t);
    static const kr_field_t other[] = { KR_FIELD(two_t, a, KR_FIELD_I32), KR_FIELD(two_t, b, KR_FIELD_F32), { 0 } };
    cr_assert_eq(declare(m, "good", sizeof(two_t), other), 0);
    cr_assert_eq(kr_last_status(), KR_ERR_EXISTS);
    cr_assert(strstr(kr_last_error(), "another fields table"), "%s", kr_last_error());
    cr_assert_eq(declare(m, "good", sizeof(two_t), NULL), 0);
    cr_assert_eq(kr_last_status(), KR_ERR_EXISTS);
    cr_assert_eq(kr_model_event_type_fields(m, t), good);
    kr_model_destroy(m);
}

/* An offset so large that offset + size wraps around must not pass. */
Test(gateway_payload, event_type_field_offset_wraps)
{
    kr_model_t *m = kr_model_create(&(kr_model_desc_t){ .end_time = 10, .log_level = KR_LOG_OFF });
    cr_assert_not_null(m);
    static const kr_field_t wrap[] = { { "w", KR_FIELD_I32, SIZE_MAX - 3, 1 }, { 0 } };
    cr_assert_eq(declare(m, "wrap", 8, wrap), 0, "a field at offset SIZE_MAX - 3 was accepted");
    static const kr_field_t wrap_count[] = { { "w", KR_FIELD_I64, SIZE_MAX - 7, 2 }, { 0 } };
    cr_assert_eq(declare(m, "wrap_count", 8, wrap_count), 0);
    kr_model_destroy(m);
}
