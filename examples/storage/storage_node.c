/* storage_node: one storage node of an erasure-coded store, replaying a
 * collplan plan with the C API only (collplan.h, collplan_tcp.h,
 * collplan_mpi.h).
 *
 *   storage_node --plan P --dir DIR --transport mpi|tcp [--rank R]
 *                [--peers FILE|LIST] [--key-file FILE] [--timeout MS]
 *                [--size BYTES] --in NAME --out NAME
 *
 * The node knows nothing about the schedule: it asks the plan how many input
 * and output vectors its rank has, reads the inputs from its own directory
 * DIR/node<R>/ (<in>, or <in>.0, <in>.1, ... when it has several), runs the
 * plan, and writes its outputs there (<out>, or <out>.0, <out>.1, ...). A
 * rank with neither reads and writes nothing but still takes part: the
 * others may route data through it.
 *
 * Every vector is one chunk of --size bytes (a whole number of field
 * elements). A node with inputs may leave --size out: its input files give
 * it. Over MPI the rank is the rank in MPI_COMM_WORLD; over TCP it is
 * --rank, and --peers lists every rank's host:port (a file with one per
 * line, or a comma-separated list).
 *
 * Exit status: 0 done, 1 a run-time failure (I/O, transport), 2 bad usage or
 * a plan/rank/file that does not fit. */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "collplan.h"
#include "collplan_tcp.h"
#ifdef COLLPLAN_HAVE_MPI
#include "collplan_mpi.h"
#endif

enum { EXIT_RUN = 1, EXIT_USAGE = 2 };

typedef struct options {
  const char* plan;
  const char* dir;
  const char* transport;
  const char* peers;
  const char* key_file;
  const char* in;
  const char* out;
  long rank;      /* -1: not given */
  long timeout;   /* ms, 0: the transport's default */
  long long size; /* bytes per chunk, -1: from the input files */
} options;

static int my_rank = -1; /* for messages: -1 until known */

static void fail(const char* fmt, ...) {
  va_list ap;
  if (my_rank >= 0)
    fprintf(stderr, "storage_node: rank %d: ", my_rank);
  else
    fprintf(stderr, "storage_node: ");
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

static void usage(FILE* f) {
  fprintf(f,
          "usage: storage_node --plan P --dir DIR --transport mpi|tcp [--rank R] [--peers FILE|LIST]\n"
          "                    [--key-file FILE] [--timeout MS] [--size BYTES] --in NAME --out NAME\n"
          "  reads DIR/node<R>/<in> (<in>.<j> for several inputs), replays plan P as rank R,\n"
          "  writes DIR/node<R>/<out> (<out>.<j> for several outputs)\n");
}

/* A whole decimal number in [lo, hi], or an error naming the option. */
static int parse_number(const char* opt, const char* text, long long lo, long long hi, long long* value) {
  char* end = NULL;
  long long v;
  errno = 0;
  v = strtoll(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
    fail("%s '%s' is not a whole number in %lld..%lld", opt, text, lo, hi);
    return -1;
  }
  *value = v;
  return 0;
}

static int parse_options(int argc, char** argv, options* o) {
  int i;
  long long v;
  memset(o, 0, sizeof *o);
  o->rank = -1;
  o->size = -1;
  for (i = 1; i < argc; ++i) {
    const char* a = argv[i];
    const char* val = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      usage(stdout);
      exit(0);
    }
    if (strncmp(a, "--", 2) != 0) {
      fail("unexpected argument '%s'", a);
      return -1;
    }
    if (val == NULL) {
      fail("%s needs a value", a);
      return -1;
    }
    ++i;
    if (strcmp(a, "--plan") == 0) {
      o->plan = val;
    } else if (strcmp(a, "--dir") == 0) {
      o->dir = val;
    } else if (strcmp(a, "--transport") == 0) {
      o->transport = val;
    } else if (strcmp(a, "--peers") == 0) {
      o->peers = val;
    } else if (strcmp(a, "--key-file") == 0) {
      o->key_file = val;
    } else if (strcmp(a, "--in") == 0) {
      o->in = val;
    } else if (strcmp(a, "--out") == 0) {
      o->out = val;
    } else if (strcmp(a, "--rank") == 0) {
      if (parse_number(a, val, 0, INT_MAX, &v) != 0) return -1;
      o->rank = (long)v;
    } else if (strcmp(a, "--timeout") == 0) {
      if (parse_number(a, val, 1, INT_MAX, &v) != 0) return -1;
      o->timeout = (long)v;
    } else if (strcmp(a, "--size") == 0) {
      if (parse_number(a, val, 1, LLONG_MAX, &v) != 0) return -1;
      o->size = v;
    } else {
      fail("unknown option '%s'", a);
      return -1;
    }
  }
  if (!o->plan || !o->dir || !o->transport || !o->in || !o->out) {
    fail("--plan, --dir, --transport, --in and --out are required");
    return -1;
  }
  if (strcmp(o->transport, "mpi") != 0 && strcmp(o->transport, "tcp") != 0) {
    fail("--transport '%s' is not mpi or tcp", o->transport);
    return -1;
  }
  if (strcmp(o->transport, "tcp") == 0 && (o->rank < 0 || !o->peers)) {
    fail("--transport tcp needs --rank and --peers");
    return -1;
  }
  if (strcmp(o->transport, "mpi") == 0 && (o->peers || o->key_file)) {
    fail("--peers and --key-file are for --transport tcp only");
    return -1;
  }
  if (strchr(o->in, '/') || strchr(o->out, '/')) {
    fail("--in '%s' and --out '%s' must be file names, not paths", o->in, o->out);
    return -1;
  }
  return 0;
}

/* DIR/node<R>/NAME, with ".<j>" appended when several vectors share NAME. */
static char* file_path(const char* dir, int rank, const char* name, int j, int many) {
  size_t n = strlen(dir) + strlen(name) + 64;
  char* p = malloc(n);
  if (!p) return NULL;
  if (many)
    snprintf(p, n, "%s/node%d/%s.%d", dir, rank, name, j);
  else
    snprintf(p, n, "%s/node%d/%s", dir, rank, name);
  return p;
}

/* The size of input file `path` (a regular file), or -1 with a message. */
static long long input_size(const char* path) {
  struct stat st;
  if (stat(path, &st) != 0) {
    fail("cannot read input file '%s': %s", path, strerror(errno));
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    fail("input file '%s' is not a regular file", path);
    return -1;
  }
  return (long long)st.st_size;
}

/* Reads exactly `size` bytes of `path` into buf. */
static int read_input(const char* path, unsigned char* buf, size_t size) {
  FILE* f = fopen(path, "rb");
  size_t got;
  int extra;
  if (!f) {
    fail("cannot open input file '%s': %s", path, strerror(errno));
    return -1;
  }
  got = fread(buf, 1, size, f);
  extra = fgetc(f);
  if (ferror(f)) {
    fail("cannot read input file '%s': %s", path, strerror(errno));
    fclose(f);
    return -1;
  }
  fclose(f);
  if (got != size || extra != EOF) {
    fail("input file '%s' changed size while it was read (expected %zu bytes)", path, size);
    return -1;
  }
  return 0;
}

/* Writes `size` bytes to `path` through a temporary file renamed over it, so
 * that a node never holds half a chunk. */
static int write_output(const char* path, const unsigned char* buf, size_t size) {
  size_t n = strlen(path) + 8;
  char* tmp = malloc(n);
  FILE* f;
  int ok;
  if (!tmp) {
    fail("out of memory");
    return -1;
  }
  snprintf(tmp, n, "%s.tmp", path);
  f = fopen(tmp, "wb");
  if (!f) {
    fail("cannot create output file '%s': %s", tmp, strerror(errno));
    free(tmp);
    return -1;
  }
  ok = fwrite(buf, 1, size, f) == size;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, path) != 0) {
    fail("cannot write output file '%s': %s", path, strerror(errno));
    remove(tmp);
    free(tmp);
    return -1;
  }
  free(tmp);
  return 0;
}

/* DIR/node<R>, created if missing (a replacement node starts empty). */
static int node_dir(const char* dir, int rank) {
  size_t n = strlen(dir) + 32;
  char* p = malloc(n);
  struct stat st;
  int rc = 0;
  if (!p) return -1;
  snprintf(p, n, "%s/node%d", dir, rank);
  if (mkdir(p, 0777) != 0 && errno != EEXIST) {
    fail("cannot create node directory '%s': %s", p, strerror(errno));
    rc = -1;
  } else if (stat(p, &st) != 0 || !S_ISDIR(st.st_mode)) {
    fail("node directory '%s' is not a directory", p);
    rc = -1;
  }
  free(p);
  return rc;
}

/* Everything a rank does before the run: the plan's shape for this rank, the
 * chunk size, and the input buffer filled from the node's files. */
typedef struct node {
  collplan_plan* plan;
  int rank;
  int num_in;
  int num_out;
  size_t elem;
  size_t chunk;  /* bytes per vector */
  size_t count;  /* elements per vector */
  unsigned char* sendbuf;
  unsigned char* recvbuf;
} node;

static int prepare(const options* o, int rank, int comm_size, node* nd) {
  int j, st;
  long long size = o->size;
  memset(nd, 0, sizeof *nd);
  nd->rank = rank;
  st = collplan_open_file(o->plan, &nd->plan);
  if (st != COLLPLAN_OK) {
    fail("%s: %s", collplan_status_name(st), collplan_last_error());
    return EXIT_USAGE;
  }
  if (comm_size > 0 && comm_size != collplan_num_ranks(nd->plan)) {
    if (rank == 0) /* the same on every rank: said once */
      fail("plan '%s' (%s) has %d ranks but the job has %d processes", o->plan, collplan_operation_name(nd->plan),
         collplan_num_ranks(nd->plan), comm_size);
    return EXIT_USAGE;
  }
  if (rank >= collplan_num_ranks(nd->plan)) {
    fail("--rank %d does not exist: plan '%s' has ranks 0..%d", rank, o->plan, collplan_num_ranks(nd->plan) - 1);
    return EXIT_USAGE;
  }
  nd->num_in = collplan_num_inputs(nd->plan, rank);
  nd->num_out = collplan_num_outputs(nd->plan, rank);
  nd->elem = collplan_elem_size(nd->plan);
  if (nd->num_in < 0 || nd->num_out < 0 || nd->elem == 0) {
    fail("%s", collplan_last_error());
    return EXIT_USAGE;
  }
  if (node_dir(o->dir, rank) != 0) return EXIT_RUN;

  /* The chunk size: --size, else the first input file's. */
  for (j = 0; j < nd->num_in; ++j) {
    char* path = file_path(o->dir, rank, o->in, j, nd->num_in > 1);
    long long got = path ? input_size(path) : -1;
    if (got < 0) {
      free(path);
      return EXIT_USAGE;
    }
    if (size < 0) size = got;
    if (got != size) {
      fail("input file '%s' holds %lld bytes, not %lld (%s)", path, got, size,
           o->size >= 0 ? "--size" : "the size of the first input");
      free(path);
      return EXIT_USAGE;
    }
    free(path);
  }
  if (size < 0) {
    fail("no input of this rank in plan '%s' (%s) gives the chunk size: give it with --size BYTES", o->plan,
         collplan_operation_name(nd->plan));
    return EXIT_USAGE;
  }
  if (size == 0 || (unsigned long long)size % nd->elem != 0 || (unsigned long long)size > (size_t)-1) {
    fail("chunk size %lld bytes is not a positive whole number of %zu-byte elements of field %s", size, nd->elem,
         collplan_field_name(nd->plan));
    return EXIT_USAGE;
  }
  nd->chunk = (size_t)size;
  nd->count = nd->chunk / nd->elem;
  if ((nd->num_in > 0 && collplan_input_count(nd->plan, rank, nd->count) == 0) ||
      (nd->num_out > 0 && collplan_output_count(nd->plan, rank, nd->count) == 0)) {
    fail("%s", collplan_last_error());
    return EXIT_USAGE;
  }
  /* At least one byte each: a rank without inputs or outputs still passes
   * valid pointers. */
  nd->sendbuf = malloc(collplan_input_count(nd->plan, rank, nd->count) * nd->elem + 1);
  nd->recvbuf = malloc(collplan_output_count(nd->plan, rank, nd->count) * nd->elem + 1);
  if (!nd->sendbuf || !nd->recvbuf) {
    fail("out of memory for %d input and %d output chunks of %zu bytes", nd->num_in, nd->num_out, nd->chunk);
    return EXIT_RUN;
  }
  for (j = 0; j < nd->num_in; ++j) {
    char* path = file_path(o->dir, rank, o->in, j, nd->num_in > 1);
    int rc = path ? read_input(path, nd->sendbuf + (size_t)j * nd->chunk, nd->chunk) : -1;
    free(path);
    if (rc != 0) return EXIT_RUN;
  }
  return 0;
}

static int write_outputs(const options* o, const node* nd) {
  int j;
  for (j = 0; j < nd->num_out; ++j) {
    char* path = file_path(o->dir, nd->rank, o->out, j, nd->num_out > 1);
    int rc = path ? write_output(path, nd->recvbuf + (size_t)j * nd->chunk, nd->chunk) : -1;
    free(path);
    if (rc != 0) return EXIT_RUN;
  }
  printf("node %d: %s over %s: read %d chunk(s), wrote %d chunk(s) of %zu bytes\n", nd->rank,
         collplan_operation_name(nd->plan), collplan_field_name(nd->plan), nd->num_in, nd->num_out, nd->chunk);
  return 0;
}

static void release(node* nd) {
  collplan_close(nd->plan);
  free(nd->sendbuf);
  free(nd->recvbuf);
}

static int run_tcp(const options* o) {
  node nd;
  collplan_tcp_collective* coll = NULL;
  int rc, st;
  my_rank = (int)o->rank;
  rc = prepare(o, (int)o->rank, 0, &nd);
  if (rc == 0) {
    st = collplan_tcp_init_keyed(nd.plan, o->peers, nd.rank, (int)o->timeout, o->key_file, &coll);
    if (st == COLLPLAN_OK) st = collplan_tcp_run(coll, nd.sendbuf, nd.recvbuf, nd.count);
    collplan_tcp_free(coll);
    if (st != COLLPLAN_OK) {
      fail("%s: %s", collplan_status_name(st), collplan_last_error());
      rc = st == COLLPLAN_ERR_ARGUMENT ? EXIT_USAGE : EXIT_RUN;
    } else {
      rc = write_outputs(o, &nd);
    }
  }
  release(&nd);
  return rc;
}

#ifdef COLLPLAN_HAVE_MPI
static int run_mpi(int* argc, char*** argv, const options* o) {
  node nd;
  int rank, size, rc, worst = 0, st;
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  my_rank = rank;
  if (o->rank >= 0 && o->rank != rank) {
    fail("--rank %ld differs from this process's MPI rank %d (leave --rank out under MPI)", o->rank, rank);
    rc = EXIT_USAGE;
    memset(&nd, 0, sizeof nd);
  } else {
    rc = prepare(o, rank, size, &nd);
  }
  /* A node that cannot take part (a missing input, a plan of another size)
   * says why, and every node stops before the run instead of waiting for it. */
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (worst != 0) {
    if (rc == 0 && rank == 0) fail("another node could not take part (its message is above): nothing was run");
    release(&nd);
    MPI_Finalize();
    return rc != 0 ? rc : worst;
  }
  st = collplan_run_mpi(nd.plan, nd.sendbuf, nd.recvbuf, nd.count, MPI_COMM_WORLD);
  if (st != COLLPLAN_OK) {
    fail("%s: %s", collplan_status_name(st), collplan_last_error());
    MPI_Abort(MPI_COMM_WORLD, EXIT_RUN); /* peers may be waiting in the run */
  }
  rc = write_outputs(o, &nd);
  release(&nd);
  MPI_Allreduce(&rc, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return rc != 0 ? rc : worst;
}
#endif

int main(int argc, char** argv) {
  options o;
  if (parse_options(argc, argv, &o) != 0) {
    usage(stderr);
    return EXIT_USAGE;
  }
  if (strcmp(o.transport, "tcp") == 0) return run_tcp(&o);
#ifdef COLLPLAN_HAVE_MPI
  return run_mpi(&argc, &argv, &o);
#else
  fail("--transport mpi: this storage_node was built without MPI; use --transport tcp");
  return EXIT_USAGE;
#endif
}
