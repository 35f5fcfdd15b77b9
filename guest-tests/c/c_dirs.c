/* wasi-libc directories: readdir with telldir/seekdir (positional cookies
 * through the preview1 adapter), links, stat, times, escapes. */
#include <dirent.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transcript.h"

static int cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Entries (without . and ..), sorted, printed on one line. */
static void list(const char *label, const char *path) {
    DIR *d = opendir(path);
    if (!d) {
        printf("%s: err %s\n", label, ename(errno));
        return;
    }
    char *names[64];
    int n = 0, dots = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < 64) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            dots++;
        else
            names[n++] = strdup(e->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, cmp);
    printf("%s: ok dots=%d [", label, dots);
    for (int i = 0; i < n; i++) {
        printf(i ? " %s" : "%s", names[i]);
        free(names[i]);
    }
    printf("]\n");
}

int main(void) {
    SHOW("mkdir /d", mkdir("/d", 0755));
    SHOW("mkdir again", mkdir("/d", 0755));
    SHOW("mkdir missing parent", mkdir("/d/x/y", 0755));
    SHOW("mkdir x", mkdir("/d/x", 0755));
    SHOW("mkdir x/y", mkdir("/d/x/y", 0755));
    for (int i = 0; i < 300; i++) {
        char p[32];
        snprintf(p, sizeof p, "/d/f%03d", i);
        close(open(p, O_WRONLY | O_CREAT, 0644));
    }

    /* count, telldir/seekdir, rewinddir */
    DIR *d = opendir("/d");
    int count = 0;
    long pos = -1;
    char at_pos[64] = "", again[64] = "";
    struct dirent *e;
    while ((e = readdir(d))) {
        if (++count == 150) {
            pos = telldir(d);
            e = readdir(d);
            count++;
            strcpy(at_pos, e->d_name);
        }
    }
    printf("readdir count: %d\n", count);
    seekdir(d, pos);
    e = readdir(d);
    strcpy(again, e ? e->d_name : "(none)");
    printf("seekdir returns same entry: %d\n", strcmp(at_pos, again) == 0);
    rewinddir(d);
    count = 0;
    while (readdir(d))
        count++;
    printf("after rewinddir: %d\n", count);
    closedir(d);

    /* removing while reading */
    d = opendir("/d");
    int seen = 0, removed = 0;
    while ((e = readdir(d))) {
        seen++;
        /* Odd-numbered files: a choice that does not depend on the order. */
        if (e->d_name[0] == 'f' && atoi(e->d_name + 1) % 2) {
            char p[300];
            snprintf(p, sizeof p, "/d/%s", e->d_name);
            removed += unlink(p) == 0;
        }
    }
    closedir(d);
    printf("read while removing: seen %d removed %d\n", seen, removed);
    /* Whatever an implementation's listing skipped, the odd files go, so
       the tree left does not depend on it. */
    for (int i = 1; i < 300; i += 2) {
        char p[300];
        snprintf(p, sizeof p, "/d/f%03d", i);
        unlink(p);
    }

    /* links and stat */
    SHOW("mkdir /l", mkdir("/l", 0755));
    int fd = open("/l/t", O_WRONLY | O_CREAT, 0644);
    write(fd, "target", 6);
    close(fd);
    SHOW("symlink", symlink("t", "/l/s"));
    SHOW("symlink exists", symlink("t", "/l/s"));
    char buf[64] = {0};
    SHOW("readlink", readlink("/l/s", buf, sizeof buf - 1));
    printf("readlink data: %s\n", buf);
    SHOW("readlink file", readlink("/l/t", buf, sizeof buf));
    struct stat st;
    SHOW("lstat", lstat("/l/s", &st));
    printf("lstat link: %d size %lld\n", S_ISLNK(st.st_mode), (long long)st.st_size);
    SHOW("stat", stat("/l/s", &st));
    printf("stat reg: %d size %lld\n", S_ISREG(st.st_mode), (long long)st.st_size);
    SHOW("link", link("/l/t", "/l/h"));
    SHOW("stat nlink", stat("/l/t", &st));
    printf("nlink: %lld\n", (long long)st.st_nlink);
    SHOW("link dir", link("/l", "/l/dl"));
    SHOW("dangling", symlink("none", "/l/dg"));
    SHOW("stat dangling", stat("/l/dg", &st));
    SHOW("loop1", symlink("l2", "/l/l1"));
    SHOW("loop2", symlink("l1", "/l/l2"));
    SHOW("open loop", open("/l/l1", O_RDONLY));
    SHOW("open nofollow", open("/l/s", O_RDONLY | O_NOFOLLOW));
    list("list /l", "/l");

    /* times */
    struct timespec ts[2] = {{1000000000, 5}, {1500000000, 0}};
    SHOW("utimensat", utimensat(AT_FDCWD, "/l/t", ts, 0));
    stat("/l/t", &st);
    printf("atime ok: %d mtime ok: %d\n", st.st_atim.tv_sec == 1000000000 && st.st_atim.tv_nsec == 5,
           st.st_mtim.tv_sec == 1500000000 && st.st_mtim.tv_nsec == 0);
    struct timespec omit[2] = {{0, UTIME_OMIT}, {0, UTIME_NOW}};
    SHOW("utimensat now", utimensat(AT_FDCWD, "/l/t", omit, 0));
    stat("/l/t", &st);
    printf("atime kept: %d mtime now: %d\n", st.st_atim.tv_sec == 1000000000, st.st_mtim.tv_sec > 1600000000);

    /* rename and remove */
    SHOW("rename over", rename("/l/h", "/l/t"));
    SHOW("rename dir into self", rename("/d", "/d/x/d"));
    SHOW("rename file over dir", rename("/l/t", "/d"));
    SHOW("rmdir nonempty", rmdir("/d"));
    SHOW("rmdir file", rmdir("/l/t"));
    SHOW("unlink dir", unlink("/d"));
    SHOW("unlink missing", unlink("/nope"));
    SHOW("rmdir x/y", rmdir("/d/x/y"));
    SHOW("rmdir x", rmdir("/d/x"));
    list("list removed dir", "/d/x");
    list("list /d/.. at root", "/d/..");

    /* the sandbox edge */
    SHOW("open ..", open("/../etc/passwd", O_RDONLY));
    SHOW("open via dir ..", open("/d/../../etc/passwd", O_RDONLY));
    SHOW("escape link", symlink("../..", "/l/esc"));
    SHOW("stat via escape", stat("/l/esc/etc", &st));
    SHOW("absolute link", symlink("/etc", "/l/abs"));
    puts("done");
    return 0;
}
