/*
 * Directories that other users may have planted things in: walk a path one
 * component at a time relative to directory descriptors, create what is
 * missing, and open what is inside with O_NOFOLLOW.  Shared by libmark's
 * tracer (trace directories, written with the traced program's euid) and
 * the `mark` command (output directories, possibly created by root for
 * another user's process).  Not installed.
 *
 * Symbolic links: a link inside the path is followed only when its owner is
 * root or the caller's euid (the rule of fs.protected_symlinks: nobody else
 * can have planted it).  A link owned by anyone else is refused, with the
 * reason.  A link is read through a descriptor of the link itself, so what
 * is checked is what is followed.
 *
 * Every function here makes only system calls and touches no heap or
 * stdio when `why` is NULL, so it may run in a signal handler then
 * (the tracer creates buffer files from a marker's slow path).
 */
#ifndef MARK_UTIL_SAFE_DIR_H
#define MARK_UTIL_SAFE_DIR_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MARK_HIDDEN_UTIL __attribute__((visibility("hidden")))

enum {
	MARK_DIR_CREATE = 1u,       /* create missing components                */
};

/*
 * Open directory `path` (absolute, or relative to the working directory)
 * with O_RDONLY|O_DIRECTORY|O_CLOEXEC, walking it as described above.
 * With MARK_DIR_CREATE, missing intermediate directories are created with
 * `parent_mode` and the last one with `leaf_mode` (both under the umask).
 * *created (may be NULL) says whether this call created the last
 * component.  *parent_fd (may be NULL) receives a descriptor of the
 * directory holding the last component, and leaf (may be NULL, NAME_MAX+1
 * bytes) its name: what is needed to remove what was created, by
 * descriptor.  Returns the descriptor, or -errno with a one-line reason in
 * `why` (may be NULL) naming the offending component.
 */
MARK_HIDDEN_UTIL int mark_dir_open(const char *path, unsigned flags, mode_t parent_mode, mode_t leaf_mode,
				   bool *created, int *parent_fd, char *leaf, char *why, size_t whylen);

/*
 * Open, or with MARK_DIR_CREATE create and open, the directory `name` (one
 * component) inside `dirfd`: never through a symbolic link.
 */
MARK_HIDDEN_UTIL int mark_dir_open_at(int dirfd, const char *name, unsigned flags, mode_t mode, bool *created);

/*
 * Is the directory private to `uid`: owned by it and writable by nobody
 * else?  0, or -EPERM with the reason in `why`, which names `path`.
 */
MARK_HIDDEN_UTIL int mark_dir_check_private(int fd, uid_t uid, const char *path, char *why, size_t whylen);

/* A DIR stream listing the directory fd, on a descriptor of its own (fd
 * and its offset are left alone; closedir() closes only the new one);
 * NULL with errno set. */
MARK_HIDDEN_UTIL DIR *mark_dir_list_at(int fd);

/* Number of entries besides "." and ".." (stops counting at 1), or -errno. */
MARK_HIDDEN_UTIL int mark_dir_nonempty(int fd);

/* Create a new file `name` in `dirfd` (O_EXCL|O_NOFOLLOW|O_CLOEXEC, 0600). */
MARK_HIDDEN_UTIL int mark_file_create_at(int dirfd, const char *name, int flags);

/*
 * Remove `name` in `dirfd` only if it is still the entry this process
 * made (device and inode dev:ino; a link is not followed): a file, or with
 * `dir` an empty directory.  What took the name since stays.
 */
MARK_HIDDEN_UTIL void mark_remove_same_at(int dirfd, const char *name, uint64_t dev, uint64_t ino, bool dir);

#endif
