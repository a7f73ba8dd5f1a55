/* KR_API marks what libkairos exports. kairos is built with
 * -fvisibility=hidden, so a function is visible to plug-ins and programs
 * linking libkairos only if its public declaration carries KR_API; every
 * other function stays inside the library. Plug-ins compile against these
 * headers as they are (nothing generated), and for them KR_API only
 * restates the default visibility. */
#ifndef KAIROS_EXPORT_H
#define KAIROS_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define KR_API __attribute__((visibility("default")))
#else
#define KR_API
#endif

/* C linkage for C++ code that includes the headers: every header's
 * declarations sit between the two. */
#ifdef __cplusplus
#define KR_BEGIN_DECLS extern "C" {
#define KR_END_DECLS }
#else
#define KR_BEGIN_DECLS
#define KR_END_DECLS
#endif

#endif
