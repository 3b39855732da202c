/* Standard output and `-o FILE` files, checked: see output.h. */
#define _GNU_SOURCE
#include "output.h"
#include "command.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int output_errno;   /* the first failed write of standard output; single-threaded callers */

void cli_output_failed(int err)
{
	if (output_errno == 0)
		output_errno = err ? err : EIO;
}

int cli_flush_stdout(void)
{
	errno = 0;
	if (fflush(stdout) == 0)
		return 0;
	cli_output_failed(errno);
	return -1;
}

int cli_output_finish(int status)
{
	bool unknown = false;
	if (cli_flush_stdout() == 0 && ferror(stdout) && output_errno == 0) {
		/* A flush inside printf failed earlier; its errno is gone. */
		output_errno = EIO;
		unknown = true;
	}
	if (output_errno == 0 || output_errno == EPIPE)
		return status;
	if (unknown)
		cli_error("writing the output failed: standard output refused a write (a full disk?); "
			  "the output is incomplete");
	else
		cli_error("writing the output failed: %s; the output is incomplete", strerror(output_errno));
	return 1;
}

static const char *kind_of(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISLNK(mode))
		return "a symbolic link";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISFIFO(mode))
		return "a FIFO";
	if (S_ISSOCK(mode))
		return "a socket";
	return "not a file";
}

int output_file_open(struct output_file *o, const char *cmd, const char *path, mode_t mode)
{
	o->f = NULL;
	o->path = path;
	/* Refused before anything is written: "" + ".tmp" is ./.tmp, which would
	 * get the whole output, only for the rename to "" to fail at the end. */
	if (!path || !*path)
		return cli_error("%s: the output path given with -o is empty: give -o the path of a file to "
				 "write%s", cmd,
				 strcmp(cmd, "export") == 0 ? ", or -o - for standard output" : "");
	if ((size_t)snprintf(o->tmp, sizeof(o->tmp), "%s.tmp", path) >= sizeof(o->tmp))
		return cli_error("%s: output path too long: %s", cmd, path);
	struct stat st;
	if (lstat(path, &st) == 0 && !S_ISREG(st.st_mode))
		return cli_error("%s: %s is %s, not a regular file: the output is written to %s and renamed over "
				 "it, which would replace it; give -o the path of a regular file%s",
				 cmd, path, kind_of(st.st_mode), o->tmp,
				 strcmp(cmd, "export") == 0 ? ", or -o - for standard output (and redirect that)" : "");
	int fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0 && errno == EEXIST)
		return cli_error("%s: %s exists (left by an interrupted run, or someone else's file): remove it, "
				 "or choose another path with -o", cmd, o->tmp);
	if (fd < 0)
		return cli_error("%s: cannot create %s: %s (choose a writable path with -o)", cmd, o->tmp,
				 strerror(errno));
	if (!(o->f = fdopen(fd, "w"))) {
		int e = errno;
		close(fd);
		unlink(o->tmp);
		return cli_error("%s: cannot write %s: %s", cmd, o->tmp, strerror(e));
	}
	return 0;
}

int output_file_close(struct output_file *o, const char *cmd, bool complete)
{
	int status = 0;
	if (o->f && fclose(o->f) != 0 && complete) {
		cli_error("%s: writing %s failed: %s", cmd, o->tmp, strerror(errno));
		status = 1;
	} else if (o->f && complete) {
		struct stat st;
		/* Checked again: something else may have been put at FILE meanwhile. */
		if (lstat(o->path, &st) == 0 && !S_ISREG(st.st_mode)) {
			cli_error("%s: %s became %s while the output was written: left it alone", cmd, o->path,
				  kind_of(st.st_mode));
			status = 1;
		} else if (rename(o->tmp, o->path) != 0) {
			cli_error("%s: cannot rename %s to %s: %s", cmd, o->tmp, o->path, strerror(errno));
			status = 1;
		}
	}
	if (o->f && (status != 0 || !complete))
		unlink(o->tmp);
	o->f = NULL;
	return status;
}
