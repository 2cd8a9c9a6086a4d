// SPDX-License-Identifier: GPL-2.0
/*
 * memfuse: a small in-memory FUSE filesystem, the "fuse" scratch
 * filesystem of the filesystem matrix (harness/guest/scratch-fs).
 *
 * One flat directory of regular files whose data are buffers in this
 * process, MAX_BYTES in all.  What the tests care about is the kernel
 * side: file pages live in the page cache and stay there across opens
 * (kernel_cache), writes go through to this server at once (no writeback
 * cache), O_DIRECT goes around the cache, and shared writable mappings
 * work.  Every change of a file comes through this one mount, so the
 * kernel need not drop a file's cached pages when it sees the
 * modification time move: automatic invalidation is turned off.
 *
 * The session loop is single-threaded: one request at a time, so the
 * files need no locking however many requests the kernel has in flight.
 * An open file is reached through its handle, not its name, so that it
 * still works once unlinked (hard_remove); it is freed at the last close.
 * Only stat() of such a file fails (ESTALE): the kernel asks by inode
 * then, and libfuse has no path left to give us.
 *
 * Exit status: 0 mounted (with -f: served until unmounted), 1 mount or
 * run-time failure, 2 bad arguments.
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <fuse_lowlevel.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define BLOCK		4096UL
#define MAX_BYTES	(256UL << 20)	/* all files' data together */
#define MAX_NAME	255

static const char usage_text[] =
"usage: memfuse [--help] MOUNTPOINT [OPTIONS]\n"
"\n"
"An in-memory FUSE filesystem for the migrc filesystem matrix: one flat\n"
"directory of regular files held in this process's memory (256 MB in all),\n"
"lost at unmount.  The kernel keeps the files' pages in its page cache\n"
"across opens, writes go through to the server at once (no writeback\n"
"cache), O_DIRECT and shared writable mappings work.  fallocate() can\n"
"allocate (mode 0) and punch holes; no subdirectories.\n"
"\n"
"Mounts on MOUNTPOINT and goes to the background once the mount is there.\n"
"umount(8) or fusermount3 -u unmounts it, and the server exits.\n"
"\n"
"  -f          stay in the foreground\n"
"  -d          stay in the foreground and print libfuse's debug output\n"
"  -s          single-threaded (it always is)\n"
"  -o OPT,...  mount and libfuse options (fuse(8)), e.g. allow_other\n"
"  -h, --help  this text\n"
"\n"
"Exit status: 0 mounted (with -f: served until unmounted), 1 mount or\n"
"run-time failure, 2 bad arguments.\n";

struct node {
	struct node *next;	/* in the directory, while linked */
	char *name;
	char *data;		/* size bytes, then zeros up to cap */
	size_t size;
	size_t cap;		/* size rounded up to BLOCK */
	mode_t mode;
	uid_t uid;
	gid_t gid;
	struct timespec atime, mtime, ctime;
	unsigned int opens;	/* open file handles */
	bool linked;		/* has a name in the directory */
};

static struct node root;	/* the directory */
static struct node *files;	/* its entries */
static size_t used;		/* every file's cap, added up */

static struct timespec now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts;
}

/* Record a change: of @n's attributes, and of its data if @data. */
static void touch(struct node *n, bool data)
{
	n->ctime = now();
	if (data)
		n->mtime = n->ctime;
}

/* The open file of @fi if it has one, else what @path names, or NULL. */
static struct node *find(const char *path, struct fuse_file_info *fi)
{
	struct node *n;

	if (fi && fi->fh)
		return (struct node *)(uintptr_t)fi->fh;
	if (!path)
		return NULL;
	if (!strcmp(path, "/"))
		return &root;
	for (n = files; n; n = n->next)
		if (!strcmp(n->name, path + 1))
			return n;
	return NULL;
}

/* Free @n once it is neither in the directory nor open. */
static void put(struct node *n)
{
	if (n->linked || n->opens)
		return;
	used -= n->cap;
	free(n->data);
	free(n->name);
	free(n);
}

/* Set @n's size to @len; bytes past the old size read as zeros. */
static int resize(struct node *n, uint64_t len)
{
	size_t cap;
	char *p;

	if (len > MAX_BYTES)
		return -ENOSPC;
	cap = (len + BLOCK - 1) & ~(BLOCK - 1);
	if (cap > n->cap && used - n->cap + cap > MAX_BYTES)
		return -ENOSPC;
	if (!cap) {
		free(n->data);
		n->data = NULL;
	} else if (cap != n->cap) {
		p = realloc(n->data, cap);
		if (!p)
			return -ENOMEM;
		if (cap > n->cap)
			memset(p + n->cap, 0, cap - n->cap);
		n->data = p;
	}
	used = used - n->cap + cap;
	n->cap = cap;
	/* Keep the tail zero, for a later extension to read. */
	if (len < n->size && cap > len)
		memset(n->data + len, 0, cap - len);
	n->size = len;
	return 0;
}

static void *mf_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	cfg->kernel_cache = 1;
	cfg->hard_remove = 1;
	conn->want &= ~(FUSE_CAP_AUTO_INVAL_DATA | FUSE_CAP_WRITEBACK_CACHE);
	return NULL;
}

static int mf_getattr(const char *path, struct stat *st,
		      struct fuse_file_info *fi)
{
	struct node *n = find(path, fi);

	if (!n)
		return -ENOENT;
	memset(st, 0, sizeof(*st));
	st->st_mode = n->mode;
	st->st_nlink = n == &root ? 2 : n->linked;
	st->st_uid = n->uid;
	st->st_gid = n->gid;
	st->st_size = n->size;
	st->st_blksize = BLOCK;
	st->st_blocks = n->cap / 512;
	st->st_atim = n->atime;
	st->st_mtim = n->mtime;
	st->st_ctim = n->ctime;
	return 0;
}

/* Only ever asked of the root, the one directory. */
static int mf_readdir(const char *path, void *buf, fuse_fill_dir_t fill,
		      off_t off, struct fuse_file_info *fi,
		      enum fuse_readdir_flags flags)
{
	struct node *n;

	if (fill(buf, ".", NULL, 0, 0) || fill(buf, "..", NULL, 0, 0))
		return -ENOMEM;
	for (n = files; n; n = n->next)
		if (fill(buf, n->name, NULL, 0, 0))
			return -ENOMEM;
	return 0;
}

static int mf_open(const char *path, struct fuse_file_info *fi)
{
	struct node *n = find(path, NULL);
	int err;

	if (!n)
		return -ENOENT;
	if (n == &root)
		return -EISDIR;
	/* The kernel leaves O_TRUNC to us (atomic_o_trunc). */
	if ((fi->flags & O_TRUNC) && n->size) {
		err = resize(n, 0);
		if (err)
			return err;
		touch(n, true);
	}
	n->opens++;
	fi->fh = (uintptr_t)n;
	return 0;
}

static int mf_create(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct fuse_context *ctx = fuse_get_context();
	const char *name = path + 1;
	struct node *n = find(path, NULL);

	if (n)
		return fi->flags & O_EXCL ? -EEXIST : mf_open(path, fi);
	if (strchr(name, '/'))
		return -ENOENT;
	if (strlen(name) > MAX_NAME)
		return -ENAMETOOLONG;
	if (!S_ISREG(mode))
		return -EPERM;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->name = strdup(name);
	if (!n->name) {
		free(n);
		return -ENOMEM;
	}
	n->mode = S_IFREG | (mode & 07777);
	n->uid = ctx->uid;
	n->gid = ctx->gid;
	n->atime = now();
	n->mtime = n->atime;
	n->ctime = n->atime;
	n->linked = true;
	n->opens = 1;
	n->next = files;
	files = n;
	touch(&root, true);
	fi->fh = (uintptr_t)n;
	return 0;
}

static int mf_release(const char *path, struct fuse_file_info *fi)
{
	struct node *n = find(NULL, fi);

	n->opens--;
	put(n);
	return 0;
}

static int mf_unlink(const char *path)
{
	struct node **pp, *n;

	for (pp = &files; *pp; pp = &(*pp)->next)
		if (!strcmp((*pp)->name, path + 1))
			break;
	n = *pp;
	if (!n)
		return -ENOENT;
	*pp = n->next;
	n->linked = false;
	touch(n, false);
	touch(&root, true);
	put(n);
	return 0;
}

static int mf_read(const char *path, char *buf, size_t len, off_t off,
		   struct fuse_file_info *fi)
{
	struct node *n = find(path, fi);

	if (!n)
		return -ENOENT;
	if (off < 0)
		return -EINVAL;
	if ((uint64_t)off >= n->size)
		return 0;
	if (len > n->size - off)
		len = n->size - off;
	memcpy(buf, n->data + off, len);
	return len;
}

static int mf_write(const char *path, const char *buf, size_t len, off_t off,
		    struct fuse_file_info *fi)
{
	struct node *n = find(path, fi);
	int err;

	if (!n)
		return -ENOENT;
	if (off < 0)
		return -EINVAL;
	if (len > MAX_BYTES || (uint64_t)off > MAX_BYTES - len)
		return -ENOSPC;
	if (off + len > n->size) {
		err = resize(n, off + len);
		if (err)
			return err;
	}
	memcpy(n->data + off, buf, len);
	touch(n, true);
	return len;
}

static int mf_truncate(const char *path, off_t len, struct fuse_file_info *fi)
{
	struct node *n = find(path, fi);
	int err;

	if (!n)
		return -ENOENT;
	if (n == &root)
		return -EISDIR;
	if (len < 0)
		return -EINVAL;
	err = resize(n, len);
	if (!err)
		touch(n, true);
	return err;
}

/* Mode 0 allocates (and extends), a punched hole reads as zeros. */
static int mf_fallocate(const char *path, int mode, off_t off, off_t len,
			struct fuse_file_info *fi)
{
	struct node *n = find(path, fi);
	uint64_t end;
	int err = 0;

	if (!n)
		return -ENOENT;
	if (off < 0 || len <= 0)
		return -EINVAL;
	end = (uint64_t)off + len;
	switch (mode) {
	case 0:
		if (end > n->size)
			err = resize(n, end);
		break;
	case FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE:
		if (end > n->size)
			end = n->size;
		if ((uint64_t)off < end)
			memset(n->data + off, 0, end - off);
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (!err)
		touch(n, true);
	return err;
}

/* Every write has reached the buffers already. */
static int mf_flush(const char *path, struct fuse_file_info *fi)
{
	return 0;
}

static int mf_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	return 0;
}

static int mf_statfs(const char *path, struct statvfs *st)
{
	memset(st, 0, sizeof(*st));
	st->f_bsize = BLOCK;
	st->f_frsize = BLOCK;
	st->f_blocks = MAX_BYTES / BLOCK;
	st->f_bfree = (MAX_BYTES - used) / BLOCK;
	st->f_bavail = st->f_bfree;
	st->f_namemax = MAX_NAME;
	return 0;
}

static int mf_chmod(const char *path, mode_t mode, struct fuse_file_info *fi)
{
	struct node *n = find(path, fi);

	if (!n)
		return -ENOENT;
	n->mode = (n->mode & S_IFMT) | (mode & 07777);
	touch(n, false);
	return 0;
}

static int mf_chown(const char *path, uid_t uid, gid_t gid,
		    struct fuse_file_info *fi)
{
	struct node *n = find(path, fi);

	if (!n)
		return -ENOENT;
	if (uid != (uid_t)-1)
		n->uid = uid;
	if (gid != (gid_t)-1)
		n->gid = gid;
	touch(n, false);
	return 0;
}

static void set_time(struct timespec *t, const struct timespec *to)
{
	if (to->tv_nsec == UTIME_NOW)
		*t = now();
	else if (to->tv_nsec != UTIME_OMIT)
		*t = *to;
}

static int mf_utimens(const char *path, const struct timespec tv[2],
		      struct fuse_file_info *fi)
{
	struct node *n = find(path, fi);

	if (!n)
		return -ENOENT;
	set_time(&n->atime, &tv[0]);
	set_time(&n->mtime, &tv[1]);
	touch(n, false);
	return 0;
}

static const struct fuse_operations mf_ops = {
	.init		= mf_init,
	.getattr	= mf_getattr,
	.readdir	= mf_readdir,
	.open		= mf_open,
	.create		= mf_create,
	.release	= mf_release,
	.unlink		= mf_unlink,
	.read		= mf_read,
	.write		= mf_write,
	.truncate	= mf_truncate,
	.fallocate	= mf_fallocate,
	.flush		= mf_flush,
	.fsync		= mf_fsync,
	.statfs		= mf_statfs,
	.chmod		= mf_chmod,
	.chown		= mf_chown,
	.utimens	= mf_utimens,
};

/*
 * libfuse's messages, as ours: "memfuse: invalid argument `x'".  Some
 * lines come in pieces; only their first one gets the prefix.
 */
static void log_msg(enum fuse_log_level level, const char *fmt, va_list ap)
{
	static bool midline;
	bool piece = *fmt && fmt[strlen(fmt) - 1] != '\n';

	if (!midline && level < FUSE_LOG_DEBUG) {
		if (!strncmp(fmt, "fuse: ", 6))
			fmt += 6;
		fputs("memfuse: ", stderr);
	}
	vfprintf(stderr, fmt, ap);
	midline = piece;
}

int main(int argc, char *argv[])
{
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct fuse_cmdline_opts opts;
	struct fuse *fuse;
	struct stat st;
	int ret = 2;

	fuse_set_log_func(log_msg);
	/* On a bad argument, libfuse has said which. */
	if (fuse_parse_cmdline(&args, &opts))
		return 2;
	if (opts.show_help || opts.show_version) {
		if (opts.show_help)
			fputs(usage_text, stdout);
		else
			printf("memfuse, libfuse %s\n", fuse_pkgversion());
		ret = 0;
		goto out;
	}
	if (!opts.mountpoint) {
		fputs("memfuse: no mountpoint given (memfuse --help)\n", stderr);
		goto out;
	}
	/* libfuse would mount on a file too, as a root of that type. */
	if (stat(opts.mountpoint, &st) || !S_ISDIR(st.st_mode)) {
		fprintf(stderr, "memfuse: mountpoint %s is not a directory\n",
			opts.mountpoint);
		goto out;
	}

	root.mode = S_IFDIR | 0755;
	root.uid = getuid();
	root.gid = getgid();
	root.atime = now();
	root.mtime = root.atime;
	root.ctime = root.atime;

	/* Fails on an unknown option, saying so. */
	fuse = fuse_new(&args, &mf_ops, sizeof(mf_ops), NULL);
	if (!fuse)
		goto out;
	ret = 1;
	if (fuse_mount(fuse, opts.mountpoint))
		goto out_destroy;
	/* The mount is there: the parent may exit 0, the child serves it. */
	if (fuse_daemonize(opts.foreground))
		goto out_unmount;
	if (fuse_set_signal_handlers(fuse_get_session(fuse)))
		goto out_unmount;
	/* Until unmounted (0) or a signal (its number): both are fine. */
	if (fuse_loop(fuse) >= 0)
		ret = 0;
	fuse_remove_signal_handlers(fuse_get_session(fuse));
out_unmount:
	fuse_unmount(fuse);
out_destroy:
	fuse_destroy(fuse);
out:
	free(opts.mountpoint);
	fuse_opt_free_args(&args);
	return ret;
}
