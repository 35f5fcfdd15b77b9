/* wasi-libc stdio and POSIX file descriptors on regular files. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "transcript.h"

static void cat(const char *label, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) {
        printf("%s: err %s\n", label, ename(errno));
        return;
    }
    char buf[256];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = 0;
    fclose(f);
    printf("%s: ok \"", label);
    for (size_t i = 0; i < n; i++)
        putchar(buf[i] == '\n' ? '|' : (buf[i] ? buf[i] : '0'));
    printf("\" (%zu)\n", n);
}

int main(void) {
    SHOW("mkdir /s", mkdir("/s", 0755));

    FILE *f = fopen("/s/a.txt", "w");
    SHOWP("fopen w", f);
    fprintf(f, "line %d\n", 1);
    fputs("line 2\n", f);
    SHOW("fclose", fclose(f));
    cat("read a", "/s/a.txt");

    f = fopen("/s/a.txt", "a");
    fputs("line 3\n", f);
    fclose(f);
    cat("after append", "/s/a.txt");

    f = fopen("/s/a.txt", "r+");
    SHOWP("fopen r+", f);
    SHOW("fseek", fseek(f, 5, SEEK_SET));
    fputs("X", f);
    SHOW("ftell", ftell(f));
    SHOW("fseek end", fseek(f, 0, SEEK_END));
    SHOW("ftell end", ftell(f));
    fclose(f);
    cat("after r+", "/s/a.txt");

    SHOWP("fopen missing", fopen("/s/missing", "r"));
    SHOWP("fopen dir w", fopen("/s", "w"));
    SHOWP("fopen under file", fopen("/s/a.txt/x", "w"));

    /* POSIX descriptors */
    int fd = open("/s/p", O_RDWR | O_CREAT | O_EXCL, 0644);
    SHOW("open creat excl", fd);
    SHOW("open creat excl again", open("/s/p", O_RDWR | O_CREAT | O_EXCL, 0644));
    SHOW("pwrite", pwrite(fd, "hello world", 11, 0));
    SHOW("pwrite past end", pwrite(fd, "!", 1, 20));
    char buf[64] = {0};
    SHOW("pread", pread(fd, buf, 5, 6));
    printf("pread data: %s\n", buf);
    SHOW("lseek end", lseek(fd, 0, SEEK_END));
    SHOW("lseek negative", lseek(fd, -100, SEEK_SET));
    SHOW("ftruncate", ftruncate(fd, 4));
    struct stat st;
    SHOW("fstat", fstat(fd, &st));
    printf("fstat size: %lld regular: %d\n", (long long)st.st_size, S_ISREG(st.st_mode));
    SHOW("close", close(fd));
    SHOW("close again", close(fd));
    cat("after truncate", "/s/p");

    fd = open("/s/p", O_WRONLY | O_APPEND);
    SHOW("open append", fd);
    SHOW("lseek start", lseek(fd, 0, SEEK_SET));
    SHOW("write appends", write(fd, "++", 2));
    close(fd);
    cat("after append fd", "/s/p");

    fd = open("/s/p", O_RDONLY);
    SHOW("write on rdonly", write(fd, "x", 1));
    SHOW("ftruncate rdonly", ftruncate(fd, 0));
    close(fd);
    fd = open("/s/p", O_WRONLY);
    SHOW("read on wronly", read(fd, buf, 1));
    close(fd);
    SHOW("open dir wronly", open("/s", O_WRONLY));
    SHOW("open file as dir", open("/s/p", O_RDONLY | O_DIRECTORY));
    SHOW("open trunc", open("/s/p", O_WRONLY | O_TRUNC));
    cat("after O_TRUNC", "/s/p");

    /* 1 MiB through stdio, read back in odd chunks */
    char *big = malloc(1 << 20);
    for (int i = 0; i < (1 << 20); i++)
        big[i] = (char)(i * 7 + 3);
    f = fopen("/s/big", "wb");
    printf("fwrite big: %zu\n", fwrite(big, 1, 1 << 20, f));
    fclose(f);
    f = fopen("/s/big", "rb");
    size_t total = 0, same = 1, n;
    char chunk[1000];
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (memcmp(chunk, big + total, n) != 0)
            same = 0;
        total += n;
    }
    fclose(f);
    printf("fread big: %zu same: %zu\n", total, same);

    SHOW("remove", remove("/s/big"));
    SHOW("remove again", remove("/s/big"));
    SHOW("rename", rename("/s/a.txt", "/s/b.txt"));
    cat("renamed", "/s/b.txt");
    SHOW("unlink dir", unlink("/s"));
    SHOW("rmdir nonempty", rmdir("/s"));
    puts("done");
    return 0;
}
