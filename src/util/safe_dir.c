/*
 * Walking and creating directories safely; see safe_dir.h for the rules.
 *
 * Why component by component: a path handed to mkdir()/open() is resolved
 * by the kernel at each call, and a user who can write any directory on it
 * can swap a component for a link between two calls.  Holding a descriptor
 * of each directory and resolving one name at a time with O_NOFOLLOW means
 * each step acts on the directory checked at the previous one.
 */
#define _GNU_SOURCE
#include "util/safe_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
#define MAX_LINKS 40   /* as the kernel's own limit on links in one lookup */

/* Close `fd` and return -err with the reason in why (when asked for). */
static int fail(int fd, int err, char *why, size_t whylen, const char *fmt, const char *name, unsigned a,
		unsigned b)
{
	if (fd >= 0)
		close(fd);
	if (why && whylen) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
		int n = snprintf(why, whylen, fmt, name, a, b);
#pragma GCC diagnostic pop
		if (n >= 0 && (size_t)n < whylen && err != EPERM)
			snprintf(why + n, whylen - (size_t)n, ": %s", strerror(err));
	}
	return -err;
}

int mark_dir_open_at(int dirfd, const char *name, unsigned flags, mode_t mode, bool *created)
{
	if (created)
		*created = false;
	int fd = openat(dirfd, name, DIR_FLAGS);
	if (fd < 0 && errno == ENOENT && (flags & MARK_DIR_CREATE)) {
		if (mkdirat(dirfd, name, mode) == 0) {
			if (created)
				*created = true;
		} else if (errno != EEXIST) {
			return -errno;
		}
		fd = openat(dirfd, name, DIR_FLAGS);
	}
	return fd < 0 ? -errno : fd;
}

int mark_dir_open(const char *path, unsigned flags, mode_t parent_mode, mode_t leaf_mode, bool *created,
		  int *parent_fd, char *leaf, char *why, size_t whylen)
{
	char buf[PATH_MAX];
	if (created)
		*created = false;
	if (parent_fd)
		*parent_fd = -1;
	if (leaf)
		leaf[0] = '\0';
	size_t len = strlen(path);
	if (len == 0)
		return fail(-1, ENOENT, why, whylen, "the directory name is empty%s", "", 0, 0);
	if (len >= sizeof(buf))
		return fail(-1, ENAMETOOLONG, why, whylen, "the path %.64s... is too long", path, 0, 0);
	memcpy(buf, path, len + 1);
	int dfd = open(buf[0] == '/' ? "/" : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return fail(-1, errno, why, whylen, "cannot open %s", buf[0] == '/' ? "/" : ".", 0, 0);
	char *p = buf;
	int links = 0;
	for (;;) {
		while (*p == '/')
			p++;
		if (!*p)
			return dfd;   /* "/", ".", or a link to one of them: nothing was created */
		char *end = p;
		while (*end && *end != '/')
			end++;
		size_t clen = (size_t)(end - p);
		char comp[NAME_MAX + 1];
		if (clen > NAME_MAX)
			return fail(dfd, ENAMETOOLONG, why, whylen, "a component of %s is too long", path, 0, 0);
		memcpy(comp, p, clen);
		comp[clen] = '\0';
		p = end;
		const char *after = p;
		while (*after == '/')
			after++;
		const bool last = !*after;
		if (strcmp(comp, ".") == 0)
			continue;
		bool made = false;
		int fd = mark_dir_open_at(dfd, comp, flags, last ? leaf_mode : parent_mode, &made);
		if (fd == -ELOOP || fd == -ENOTDIR) {
			/* A link (followed if trusted) or not a directory at all. */
			int lfd = openat(dfd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			struct stat st;
			if (lfd < 0 || fstat(lfd, &st) != 0 || !S_ISLNK(st.st_mode)) {
				if (lfd >= 0)
					close(lfd);
				return fail(dfd, ENOTDIR, why, whylen, "%s is not a directory", comp, 0, 0);
			}
			if (st.st_uid != 0 && st.st_uid != geteuid()) {
				close(lfd);
				return fail(dfd, EPERM, why, whylen,
					    "%s is a symbolic link owned by uid %u; mark follows only links owned "
					    "by root or by uid %u (give the real path)", comp, (unsigned)st.st_uid,
					    (unsigned)geteuid());
			}
			char target[PATH_MAX];
			ssize_t n = readlinkat(lfd, "", target, sizeof(target) - 1);
			close(lfd);
			if (n <= 0 || ++links > MAX_LINKS)
				return fail(dfd, n <= 0 ? EINVAL : ELOOP, why, whylen, "cannot follow the link %s", comp,
					    0, 0);
			/* Walk the link's target, then the rest of the path. */
			size_t rest = strlen(p);
			if ((size_t)n + rest + 1 > sizeof(buf))
				return fail(dfd, ENAMETOOLONG, why, whylen, "the target of the link %s is too long",
					    comp, 0, 0);
			memmove(buf + n, p, rest + 1);
			memcpy(buf, target, (size_t)n);
			p = buf;
			if (buf[0] == '/') {
				close(dfd);
				if ((dfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
					return fail(-1, errno, why, whylen, "cannot open %s", "/", 0, 0);
			}
			continue;
		}
		if (fd < 0)
			return fail(dfd, -fd, why, whylen,
				    (flags & MARK_DIR_CREATE) ? "cannot create or open the directory %s"
							      : "cannot open the directory %s", comp, 0, 0);
		if (last) {
			if (created)
				*created = made;
			if (leaf)
				memcpy(leaf, comp, clen + 1);
			if (parent_fd)
				*parent_fd = dfd;
			else
				close(dfd);
			return fd;
		}
		close(dfd);
		dfd = fd;
	}
}

int mark_dir_check_private(int fd, uid_t uid, const char *path, char *why, size_t whylen)
{
	struct stat st;
	if (fstat(fd, &st) != 0)
		return fail(-1, errno, why, whylen, "cannot examine %s", path, 0, 0);
	if (st.st_uid != uid)
		return fail(-1, EPERM, why, whylen, "%s is owned by uid %u, not by uid %u, which writes the trace",
			    path, (unsigned)st.st_uid, (unsigned)uid);
	if (st.st_mode & (S_IWGRP | S_IWOTH))
		return fail(-1, EPERM, why, whylen, "%s is writable by its group or by others (mode %04o; `chmod go-w` it if it is yours)", path,
			    (unsigned)(st.st_mode & 07777), 0);
	return 0;
}

DIR *mark_dir_list_at(int fd)
{
	/* A new open file description: reading it leaves fd's offset alone. */
	int own = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (own < 0)
		return NULL;
	DIR *d = fdopendir(own);
	if (!d) {
		int err = errno;
		close(own);
		errno = err;
	}
	return d;
}

int mark_dir_nonempty(int fd)
{
	DIR *d = mark_dir_list_at(fd);
	if (!d)
		return -errno;
	int n = 0;
	struct dirent *e;
	while (!n && (e = readdir(d)))
		n = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

int mark_file_create_at(int dirfd, const char *name, int flags)
{
	int fd = openat(dirfd, name, flags | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	return fd < 0 ? -errno : fd;
}

void mark_remove_same_at(int dirfd, const char *name, uint64_t dev, uint64_t ino, bool dir)
{
	struct stat st;
	if (dirfd >= 0 && fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    (dir ? S_ISDIR(st.st_mode) : !S_ISDIR(st.st_mode)) && (uint64_t)st.st_dev == dev &&
	    (uint64_t)st.st_ino == ino)
		unlinkat(dirfd, name, dir ? AT_REMOVEDIR : 0);   /* a directory: fails, as it should, if not empty */
}
