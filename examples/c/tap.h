/* tap.h — the few test helpers the checking programs share: each check prints "ok - what" or
 * "not ok - what (details)", and the program exits with the number of failures. */
#ifndef TIERFS_EXAMPLES_TAP_H
#define TIERFS_EXAMPLES_TAP_H

#include <stdarg.h>
#include <stdio.h>
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

#endif
