/**
 * Copyright (C) rc_varuna authors 2026. ALL RIGHTS RESERVED.
 *
 * See file LICENSE for terms.
 */

/*
 * A test program's verdict line, written where no other output goes.
 *
 * The runners judge a run by the verdict line of each process ("client: OK:
 * ...", "rank 2 (pid 7683): WRONG: ..."). On stdout that line shares a
 * stdio buffer with UCX's log, which UCX's async thread writes too, and
 * under mpirun or oshrun a pipe with every other rank: a flush in the
 * middle of the line cut it in two, another rank's output came between the
 * halves, and a run in which every rank was right was judged wrong. So the
 * line also goes, in one write(2), to the file VARUNA_VERDICT_FILE names,
 * opened with O_APPEND: the kernel appends each write whole, whichever
 * processes share the file. The runners read that file only
 * (rc_varuna_verdicts in contrib/common.sh), and a process whose line is
 * not there has failed, named.
 *
 * VARUNA_VERDICT_TEST=skip:WHO or wrong:WHO tests the runners themselves:
 * the process whose verdict names WHO ("rank 2", "client") leaves its line
 * out of the file, or says WRONG although it was right. The exit status
 * and everything else stay as they were.
 *
 * Header only: the programs of src/tools and test/mpi are single files
 * built by their runners' compiler wrappers (mpicc, oshcc, gcc).
 */

#ifndef VARUNA_VERDICT_H
#define VARUNA_VERDICT_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define VARUNA_VERDICT_MAX 4096


/* Does the runner's test ask for ACTION ("skip" or "wrong") on WHO? WHO
 * matches up to a space, so "rank 2" names "rank 2 (pid 7683)" and not
 * "rank 21 (pid ...)". */
static int varuna_verdict_test(const char *action, const char *who)
{
    const char *test = getenv("VARUNA_VERDICT_TEST");
    size_t alen      = strlen(action);
    size_t wlen;

    if ((test == NULL) || strncmp(test, action, alen) || (test[alen] != ':')) {
        return 0;
    }
    test += alen + 1;
    wlen  = strlen(test);
    return (wlen > 0) && !strncmp(who, test, wlen) &&
           ((who[wlen] == '\0') || (who[wlen] == ' '));
}

/* Print "WHO: OK: DETAIL" (or WRONG) on stdout and append it to
 * VARUNA_VERDICT_FILE, if set, in one write(2) */
static void varuna_verdict(const char *who, int ok, const char *fmt, ...)
{
    const char *path = getenv("VARUNA_VERDICT_FILE");
    char line[VARUNA_VERDICT_MAX];
    size_t len;
    va_list ap;
    ssize_t ret;
    int n, fd;

    if (varuna_verdict_test("wrong", who)) {
        ok = 0;
    }
    n = snprintf(line, sizeof(line), "%s: %s: ", who, ok ? "OK" : "WRONG");
    if ((n < 0) || ((size_t)n >= sizeof(line) - 1)) {
        n = 0;
    }
    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - n - 1, fmt, ap);
    va_end(ap);
    len         = strlen(line);
    line[len++] = '\n';
    line[len]   = '\0';

    fflush(stdout);
    fputs(line, stdout);
    fflush(stdout);

    if ((path == NULL) || (path[0] == '\0') ||
        varuna_verdict_test("skip", who)) {
        return;
    }
    fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        fprintf(stderr, "%s: cannot open the verdict file %s: %m\n", who,
                path);
        return;
    }
    ret = write(fd, line, len);
    if (ret != (ssize_t)len) {
        fprintf(stderr, "%s: verdict file %s: wrote %zd of %zu bytes: %m\n",
                who, path, ret, len);
    }
    close(fd);
}

#endif
