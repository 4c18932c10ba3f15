/* tap.h — the few test helpers the checking programs share: each check prints "ok - what" or
 * "not ok - what (details)", and the program exits with the number of failures. */
#ifndef TIERFS_EXAMPLES_TAP_H
#define TIERFS_EXAMPLES_TAP_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tierfs.h"

static int tap_failed;

/* expect records one check. */
static void expect(int cond, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  printf(cond ? "ok - " : "not ok - ");
  vprintf(fmt, ap);
  printf("\n");
  va_end(ap);
  fflush(stdout);
  if (!cond) {
    tap_failed++;
  }
}

static const char *status_name(tfs_status st) {
  static const char *names[] = {"TFS_OK",     "TFS_EINVAL",  "TFS_ENOENT",  "TFS_ERANGE",
                                "TFS_ECORRUPT", "TFS_EIO",   "TFS_ENOMEM",  "TFS_ECLOSED",
                                "TFS_ENOTSUP", "TFS_EVERSION", "TFS_EINTERNAL"};
  return (unsigned)st < sizeof names / sizeof names[0] ? names[st] : "unknown status";
}

/* expect_status checks a call's status and, when want is a failure and needle is not NULL, that
 * the calling thread's message contains needle. */
static void expect_status(tfs_status got, tfs_status want, const char *needle, const char *what) {
  const char *msg = tfs_last_error();
  int ok = got == want && (want == TFS_OK || needle == NULL || strstr(msg, needle) != NULL);
  if (want == TFS_OK || got == TFS_OK) {
    expect(ok, "%s -> %s (got %s%s%s)", what, status_name(want), status_name(got), got != TFS_OK ? ": " : "",
           got != TFS_OK ? msg : "");
  } else {
    expect(ok, "%s -> %s, message mentions \"%s\" (got %s: %s)", what, status_name(want), needle ? needle : "",
           status_name(got), msg);
  }
}

/* json_counts reads the first list of integers after "key" in json into out (up to cap of them)
 * and returns how many there were, or -1 when there is none: the per-hop counts of a sample of one
 * type in its tfs_sample_json. */
static inline int json_counts(const char *json, const char *key, int64_t *out, int cap) {
  const char *p = strstr(json, key);
  p = p ? strchr(p, '[') : NULL;
  if (p == NULL) {
    return -1;
  }
  int n = 0;
  for (p++; *p != ']' && *p != '\0';) {
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p) {
      p++;
      continue;
    }
    if (n < cap) {
      out[n] = v;
    }
    n++;
    p = end;
  }
  return n;
}

/* sample_sizes is a one-type sample's sizes from tfs_sample_json: its nodes, its edges and its
 * hops (nph, eph, may be NULL: the per-hop counts, up to 16 hops). */
static inline tfs_status sample_sizes(struct tfs_sample *smp, int64_t *nn, int64_t *ne, int32_t *nh, int64_t *nph, int64_t *eph) {
  char json[4096];
  size_t needed = 0;
  tfs_status st = tfs_sample_json(smp, json, sizeof json, &needed);
  if (st != TFS_OK || needed > sizeof json) {
    return st != TFS_OK ? st : TFS_EINVAL;
  }
  int64_t n[17], e[16];
  int hn = json_counts(json, "\"nodes_per_hop\"", n, 17), he = json_counts(json, "\"edges_per_hop\"", e, 16);
  if (hn < 1 || he < 0 || hn > 17) {
    return TFS_EINVAL;
  }
  *nn = *ne = 0;
  for (int h = 0; h < hn; h++) {
    *nn += n[h];
    if (nph) nph[h] = n[h];
  }
  for (int h = 0; h < he; h++) {
    *ne += e[h];
    if (eph) eph[h] = e[h];
  }
  *nh = hn - 1;
  return TFS_OK;
}

#endif
