/* Exact bytes of every file in a tree, read four ways: read(2) of 4 KiB at a
 * time, fread (wasi-libc passes two iovecs: the caller's buffer and the
 * FILE's), one read(2) of the whole file, and pread(2) at pseudo-random
 * offsets and lengths (some past the end, some over 1 MiB). Each mode prints
 * the bytes it got and their FNV-1a 64 hash, so a wrong byte anywhere shows,
 * not only a wrong length. Directories are listed (sorted) and walked;
 * symlinks are read with readlink and followed.
 *
 *   c_reads DIR [MODES]   walks DIR, reading each file in each of MODES
 *                         (comma-separated; default read4k,fread,whole,pread),
 *                         and with `write`: flipping its middle byte with
 *                         pwrite (on an overlay, a copy-up), then hashing it
 *                         again. One mode per run reads a lazy pack cold: the
 *                         first read of a file's bytes is that mode's.
 *   c_reads               the standard trees: /seed (every mode, write
 *                         too) and /ro (every read mode).
 *
 * Lines: `<path> <mode> <bytes> <hash>`, `list <path>: [names]` (a `/`
 * after a directory, `@` after a symlink), `readlink <path>: <target>`. */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transcript.h"

#define FNV_BASIS 0xcbf29ce484222325ULL
#define PREADS 16
/* The longest pread: across several of the browser's 1 MiB copy pieces. */
#define PREAD_MAX (3 << 20)
#define FREAD_PIECE (128 << 10)

static uint64_t fnv(uint64_t h, const unsigned char *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static void line(const char *path, const char *mode, long long n, uint64_t h) {
    printf("%s %s %lld %016llx\n", path, mode, n, (unsigned long long)h);
}

static void fail(const char *path, const char *mode) { printf("%s %s: err %s\n", path, mode, ename(errno)); }

/* PREAD_MAX bytes, for pread and fread. */
static unsigned char *pread_buf;

/* read(2) of 4 KiB at a time to the end. */
static void by_pieces(const char *full, const char *path, const char *mode) {
    int fd = open(full, O_RDONLY);
    if (fd < 0) {
        fail(path, mode);
        return;
    }
    unsigned char buf[4096];
    uint64_t h = FNV_BASIS;
    long long total = 0;
    for (;;) {
        ssize_t n = read(fd, buf, sizeof buf);
        if (n < 0) {
            fail(path, mode);
            close(fd);
            return;
        }
        if (n == 0)
            break;
        h = fnv(h, buf, n);
        total += n;
    }
    close(fd);
    line(path, mode, total, h);
}

/* fread of 128 KiB pieces (the issue's case). */
static void by_fread(const char *full, const char *path) {
    FILE *f = fopen(full, "rb");
    if (!f) {
        fail(path, "fread");
        return;
    }
    uint64_t h = FNV_BASIS;
    long long total = 0;
    size_t n;
    while ((n = fread(pread_buf, 1, FREAD_PIECE, f)) > 0) {
        h = fnv(h, pread_buf, n);
        total += n;
    }
    if (ferror(f))
        fail(path, "fread");
    else
        line(path, "fread", total, h);
    fclose(f);
}

/* One read(2) of the whole file (and a byte more). */
static void by_one_read(const char *full, const char *path, long long size) {
    int fd = open(full, O_RDONLY);
    if (fd < 0) {
        fail(path, "whole");
        return;
    }
    unsigned char *buf = malloc(size + 1);
    ssize_t n = read(fd, buf, size + 1);
    if (n < 0)
        fail(path, "whole");
    else
        line(path, "whole", n, fnv(FNV_BASIS, buf, n));
    free(buf);
    close(fd);
}

static uint32_t next(uint32_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

/* PREADS preads, offsets and lengths from a generator seeded by the size
 * (some past the end, some of megabytes); the descriptor's position must
 * stay at 0. */
static void by_pread(const char *full, const char *path, long long size) {
    int fd = open(full, O_RDONLY);
    if (fd < 0) {
        fail(path, "pread");
        return;
    }
    uint32_t s = (uint32_t)size * 2654435761u + 12345u;
    uint64_t h = FNV_BASIS;
    long long total = 0;
    for (int i = 0; i < PREADS; i++) {
        long long off = next(&s) % (uint64_t)(size + 64);
        uint32_t r = next(&s);
        size_t len = r % 4 == 0 ? r % 100 : r % 4 == 1 ? r % 65536 : r % 4 == 2 ? r % 300000 : r % PREAD_MAX;
        /* A pread may return less than asked (wasmtime's does, past some
         * size): ask again for the rest, as a careful program would. */
        size_t got = 0;
        for (;;) {
            ssize_t n = pread(fd, pread_buf + got, len - got, off + got);
            if (n < 0) {
                fail(path, "pread");
                close(fd);
                return;
            }
            got += n;
            if (n == 0 || got == len)
                break;
        }
        h = fnv(h, pread_buf, got);
        total += got;
    }
    if (lseek(fd, 0, SEEK_CUR) != 0)
        printf("%s pread: position moved\n", path);
    close(fd);
    line(path, "pread", total, h);
}

/* Flips the middle byte with pwrite, then hashes the whole file again. */
static void copy_up(const char *full, const char *path, long long size) {
    int fd = open(full, O_RDWR);
    if (fd < 0) {
        fail(path, "write");
        return;
    }
    unsigned char b = 0;
    int ok = pread(fd, &b, 1, size / 2) == 1;
    b ^= 0x5a;
    ok = ok && pwrite(fd, &b, 1, size / 2) == 1;
    close(fd);
    if (!ok) {
        fail(path, "write");
        return;
    }
    by_pieces(full, path, "write");
}

static const char *modes;

/* `mode` is one of `modes`. */
static int has(const char *mode) {
    size_t n = strlen(mode);
    for (const char *m = modes; *m;) {
        const char *end = strchr(m, ',');
        size_t len = end ? (size_t)(end - m) : strlen(m);
        if (len == n && !strncmp(m, mode, n))
            return 1;
        m += len + (end != NULL);
    }
    return 0;
}

static int by_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Lists `full` (shown as `path`), then reads each entry, in name order. */
static void walk(const char *full, const char *path) {
    DIR *d = opendir(full);
    if (!d) {
        printf("list %s: err %s\n", path, ename(errno));
        return;
    }
    int n = 0, cap = 16;
    char **names = malloc(cap * sizeof *names);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (n == cap)
            names = realloc(names, (cap *= 2) * sizeof *names);
        names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, by_name);

    char (*fulls)[512] = malloc(n * sizeof *fulls), (*paths)[512] = malloc(n * sizeof *paths);
    struct stat *sts = malloc(n * sizeof *sts);
    printf("list %s: [", path);
    for (int i = 0; i < n; i++) {
        snprintf(fulls[i], sizeof fulls[i], "%s/%s", full, names[i]);
        snprintf(paths[i], sizeof paths[i], "%s/%s", path, names[i]);
        const char *mark = "";
        if (lstat(fulls[i], &sts[i]) < 0)
            mark = "?";
        else if (S_ISDIR(sts[i].st_mode))
            mark = "/";
        else if (S_ISLNK(sts[i].st_mode))
            mark = "@";
        printf(i ? " %s%s" : "%s%s", names[i], mark);
    }
    printf("]\n");

    for (int i = 0; i < n; i++) {
        struct stat *st = &sts[i];
        if (S_ISDIR(st->st_mode)) {
            walk(fulls[i], paths[i]);
        } else if (S_ISLNK(st->st_mode)) {
            char target[512];
            ssize_t len = readlink(fulls[i], target, sizeof target - 1);
            if (len < 0) {
                printf("readlink %s: err %s\n", paths[i], ename(errno));
                continue;
            }
            target[len] = 0;
            printf("readlink %s: %s\n", paths[i], target);
            struct stat to;
            if (stat(fulls[i], &to) == 0 && S_ISREG(to.st_mode))
                by_pieces(fulls[i], paths[i], "via-link");
        } else if (S_ISREG(st->st_mode)) {
            long long size = st->st_size;
            if (has("read4k"))
                by_pieces(fulls[i], paths[i], "read4k");
            if (has("fread"))
                by_fread(fulls[i], paths[i]);
            if (has("whole"))
                by_one_read(fulls[i], paths[i], size);
            if (has("pread"))
                by_pread(fulls[i], paths[i], size);
            if (has("write") && size > 0)
                copy_up(fulls[i], paths[i], size);
        }
        free(names[i]);
    }
    free(names);
    free(fulls);
    free(paths);
    free(sts);
}

int main(int argc, char **argv) {
    pread_buf = malloc(PREAD_MAX);
    const char *reads = "read4k,fread,whole,pread";
    if (argc > 1) {
        modes = argc > 2 ? argv[2] : reads;
        walk(argv[1], ".");
    } else {
        modes = "read4k,fread,whole,pread,write";
        walk("/seed", "seed");
        modes = reads;
        walk("/ro", "ro");
    }
    puts("done");
    return 0;
}
