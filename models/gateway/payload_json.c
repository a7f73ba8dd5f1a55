/* Payloads as JSON objects (payload_json.h). Integers must be whole and in
 * their field's range, booleans true or false, arrays as long as the
 * field: a value that would be changed on the way in is refused, never
 * rounded or wrapped. */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "models/gateway/payload_json.h"

static size_t width(kr_field_type_t t)
{
    switch (t) {
    case KR_FIELD_BOOL: case KR_FIELD_I8: case KR_FIELD_U8: return 1;
    case KR_FIELD_I16: case KR_FIELD_U16: return 2;
    case KR_FIELD_I32: case KR_FIELD_U32: case KR_FIELD_F32: return 4;
    default: return 8;
    }
}

static json_t *element_to_json(kr_field_type_t t, const unsigned char *at)
{
    union { bool b; int8_t i8; uint8_t u8; int16_t i16; uint16_t u16; int32_t i32; uint32_t u32; int64_t i64;
            uint64_t u64; float f32; double f64; } v;
    memcpy(&v, at, width(t));
    switch (t) {
    case KR_FIELD_BOOL: return json_boolean(v.b);
    case KR_FIELD_I8: return json_integer(v.i8);
    case KR_FIELD_U8: return json_integer(v.u8);
    case KR_FIELD_I16: return json_integer(v.i16);
    case KR_FIELD_U16: return json_integer(v.u16);
    case KR_FIELD_I32: return json_integer(v.i32);
    case KR_FIELD_U32: return json_integer(v.u32);
    case KR_FIELD_I64: return json_integer(v.i64);
    /* JSON integers here are signed 64-bit: larger ones go out as reals */
    case KR_FIELD_U64: return v.u64 <= INT64_MAX ? json_integer((json_int_t)v.u64) : json_real((double)v.u64);
    case KR_FIELD_F32: return isfinite(v.f32) ? json_real(v.f32) : json_null();
    default: return isfinite(v.f64) ? json_real(v.f64) : json_null();
    }
}

json_t *kr__payload_to_json(const kr_field_t *fields, const void *payload)
{
    json_t *o = json_object();
    for (const kr_field_t *f = fields; o && f && f->name; f++) {
        uint32_t n = f->count ? f->count : 1;
        const unsigned char *at = (const unsigned char *)payload + f->offset;
        json_t *v = n == 1 ? element_to_json(f->type, at) : json_array();
        for (uint32_t k = 0; n > 1 && v && k < n; k++)
            json_array_append_new(v, element_to_json(f->type, at + k * width(f->type)));
        if (!v || json_object_set_new(o, f->name, v)) {
            json_decref(o);
            return NULL;
        }
    }
    return o;
}

/* One value into its place; false if it does not fit the field's type. */
static bool element_from_json(kr_field_type_t t, const json_t *j, unsigned char *at)
{
    if (t == KR_FIELD_BOOL) {
        if (!json_is_boolean(j)) return false;
        bool b = json_is_true(j);
        memcpy(at, &b, 1);
        return true;
    }
    if (!json_is_number(j)) return false;
    double d = json_number_value(j);
    if (t == KR_FIELD_F64 || t == KR_FIELD_F32) {
        if (t == KR_FIELD_F32 && fabs(d) > FLT_MAX) return false;
        if (t == KR_FIELD_F32) {
            float x = (float)d;
            memcpy(at, &x, 4);
        } else {
            memcpy(at, &d, 8);
        }
        return true;
    }
    /* an integer field: a JSON integer, or a real with no fraction */
    bool whole = json_is_integer(j) || (isfinite(d) && d == floor(d));
    if (!whole) return false;
    if (t == KR_FIELD_U64) {
        uint64_t u;
        if (json_is_integer(j)) {
            if (json_integer_value(j) < 0) return false;
            u = (uint64_t)json_integer_value(j);
        } else {
            if (d < 0 || d >= 18446744073709551616.0) return false;
            u = (uint64_t)d;
        }
        memcpy(at, &u, 8);
        return true;
    }
    int64_t x;
    if (json_is_integer(j)) x = json_integer_value(j);
    else if (d >= -9223372036854775808.0 && d < 9223372036854775808.0) x = (int64_t)d;
    else return false;
    static const int64_t lo[] = { [KR_FIELD_I8] = INT8_MIN, [KR_FIELD_U8] = 0, [KR_FIELD_I16] = INT16_MIN,
                                  [KR_FIELD_U16] = 0, [KR_FIELD_I32] = INT32_MIN, [KR_FIELD_U32] = 0,
                                  [KR_FIELD_I64] = INT64_MIN };
    static const int64_t hi[] = { [KR_FIELD_I8] = INT8_MAX, [KR_FIELD_U8] = UINT8_MAX, [KR_FIELD_I16] = INT16_MAX,
                                  [KR_FIELD_U16] = UINT16_MAX, [KR_FIELD_I32] = INT32_MAX,
                                  [KR_FIELD_U32] = UINT32_MAX, [KR_FIELD_I64] = INT64_MAX };
    if (x < lo[t] || x > hi[t]) return false;
    switch (t) {
    case KR_FIELD_I8: case KR_FIELD_U8: { uint8_t v = (uint8_t)x; memcpy(at, &v, 1); break; }
    case KR_FIELD_I16: case KR_FIELD_U16: { uint16_t v = (uint16_t)x; memcpy(at, &v, 2); break; }
    case KR_FIELD_I32: case KR_FIELD_U32: { uint32_t v = (uint32_t)x; memcpy(at, &v, 4); break; }
    default: memcpy(at, &x, 8); break;
    }
    return true;
}

static const char *type_name(kr_field_type_t t)
{
    switch (t) {
    case KR_FIELD_BOOL: return "true or false";
    case KR_FIELD_F32: case KR_FIELD_F64: return "a number";
    case KR_FIELD_I8: return "a whole number from -128 to 127";
    case KR_FIELD_U8: return "a whole number from 0 to 255";
    case KR_FIELD_I16: return "a whole number from -32768 to 32767";
    case KR_FIELD_U16: return "a whole number from 0 to 65535";
    case KR_FIELD_I32: return "a whole number from -2147483648 to 2147483647";
    case KR_FIELD_U32: return "a whole number from 0 to 4294967295";
    case KR_FIELD_U64: return "a whole number >= 0";
    default: return "a whole number";
    }
}

const char *kr__payload_from_json(const kr_field_t *fields, size_t size, const json_t *data, void *payload,
                                  char *why, size_t cap)
{
    if (size) memset(payload, 0, size);
    if (!data || json_is_null(data)) return NULL;
    if (!json_is_object(data)) {
        snprintf(why, cap, "\"data\" is not an object of the event's fields");
        return why;
    }
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)data, key, v) {
        const kr_field_t *f = fields;
        while (f && f->name && strcmp(f->name, key)) f++;
        if (!f || !f->name) {
            snprintf(why, cap, "\"data\" has the unknown field \"%.60s\"", key);
            return why;
        }
        uint32_t n = f->count ? f->count : 1;
        unsigned char *at = (unsigned char *)payload + f->offset;
        bool ok = n == 1 ? element_from_json(f->type, v, at) : json_is_array(v) && json_array_size(v) == n;
        for (uint32_t k = 0; n > 1 && ok && k < n; k++)
            ok = element_from_json(f->type, json_array_get(v, k), at + k * width(f->type));
        if (!ok) {
            if (n == 1) snprintf(why, cap, "\"data.%.60s\" is not %s", key, type_name(f->type));
            else snprintf(why, cap, "\"data.%.60s\" is not an array of %u values, each %s", key, n, type_name(f->type));
            return why;
        }
    }
    return NULL;
}
