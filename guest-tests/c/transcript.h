/* Transcript helpers for C guests: one line per operation, with its result
 * or its errno name, so two runs compare line by line. Nothing printed may
 * depend on the backend (inode numbers, directory sizes, times, order). */
#ifndef TRANSCRIPT_H
#define TRANSCRIPT_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* The preview1 adapter needs memory of its own (its stack and state). Without
 * a `cabi_realloc` export it takes pages with memory.grow at instantiation,
 * and a wasi-libc older than 2023 (Debian's is from 2022) then seeds malloc
 * with all of memory up to its current size — those pages included — and
 * the two corrupt each other (the adapter traps on its canary check). Newer
 * wasi-libc exports `cabi_realloc` itself; for the old one, export it here. */
__attribute__((export_name("cabi_realloc"))) void *cabi_realloc(void *ptr, size_t old_size, size_t align,
                                                                size_t new_size) {
    (void)old_size;
    (void)align; /* malloc aligns to 16, more than the adapter asks */
    return realloc(ptr, new_size);
}

static const char *ename(int e) {
    switch (e) {
    case 0: return "0";
    case EACCES: return "EACCES";
    case EBADF: return "EBADF";
    case EBUSY: return "EBUSY";
    case EEXIST: return "EEXIST";
    case EFBIG: return "EFBIG";
    case EINVAL: return "EINVAL";
    case EIO: return "EIO";
    case EISDIR: return "EISDIR";
    case ELOOP: return "ELOOP";
    case EMLINK: return "EMLINK";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOENT: return "ENOENT";
    case ENOSPC: return "ENOSPC";
    case ENOTDIR: return "ENOTDIR";
    case ENOTEMPTY: return "ENOTEMPTY";
    case ENOTSUP: return "ENOTSUP";
    case ENOTCAPABLE: return "ENOTCAPABLE";
    case EPERM: return "EPERM";
    case EROFS: return "EROFS";
    case ESPIPE: return "ESPIPE";
    case EXDEV: return "EXDEV";
    default: {
        static char buf[32];
        snprintf(buf, sizeof buf, "errno %d", e);
        return buf;
    }
    }
}

/* `label: ok <rc>` or `label: err <ENAME>` for a call returning -1 on error. */
#define SHOW(label, expr)                                                      \
    do {                                                                       \
        errno = 0;                                                             \
        long rc_ = (long)(expr);                                               \
        if (rc_ < 0)                                                           \
            printf("%s: err %s\n", label, ename(errno));                       \
        else                                                                   \
            printf("%s: ok %ld\n", label, rc_);                                \
    } while (0)

/* As SHOW, for calls returning a pointer (NULL on error). */
#define SHOWP(label, expr)                                                     \
    do {                                                                       \
        errno = 0;                                                             \
        if ((expr) == NULL)                                                    \
            printf("%s: err %s\n", label, ename(errno));                       \
        else                                                                   \
            printf("%s: ok\n", label);                                         \
    } while (0)

#endif
