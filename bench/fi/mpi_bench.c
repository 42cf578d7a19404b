/* MPI benchmark for impl/fi/README.md (issue #18 M8): point-to-point latency and bandwidth between
 * ranks 0 and 1, MPI_Allreduce and MPI_Alltoall, sizes 4 B to MAXBYTES (default 64 MiB) by factors
 * of 4. Prints one table per operation shaped like nccl-tests': size (bytes), time (us, the slowest
 * rank's mean), algbw and busbw (GB/s). Results are checked once per size (a wrong byte aborts).
 *   mpi_bench [MAXBYTES]
 * latency: half the round trip of a ping-pong; bandwidth: 16 MPI_Isend per window (up to 16 MiB in a
 * window) and a 4-byte reply; allreduce: float sums, busbw = algbw * 2(n-1)/n; alltoall: size is
 * each rank's send buffer, busbw = algbw * (n-1)/n. Iterations: see iterations_after. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;

static void fail(const char* what, long size) {
  fprintf(stderr, "mpi_bench: rank %d: %s (size %ld)\n", rank, what, size);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static double slowest(double t) {
  double max;
  MPI_Allreduce(&t, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return max;
}

/* Fewer iterations for large sizes: about 32 MiB moved per rank and size, 2 to 100 iterations,
 * and no more than fit in about a second after the first (warm-up) one took `first` seconds on the
 * slowest rank (TCP at 10 % loss needs 0.5 s per 64 KiB round trip). Every rank gets the same
 * count. */
static int iterations_after(long size, double first) {
  long it = (32L << 20) / (size > 0 ? size : 1);
  double t = slowest(first);
  if (t > 0 && it > (long)(1.0 / t)) it = (long)(1.0 / t);
  return it < 2 ? 2 : it > 100 ? 100 : (int)it;
}

static void row(const char* op, long size, double seconds, double factor) {
  double algbw = seconds > 0 ? (double)size / seconds / 1e9 : 0;
  if (rank == 0) printf("%-9s %12ld %12.2f %9.4f %9.4f\n", op, size, seconds * 1e6, algbw, algbw * factor);
}

/* One round of each operation; `bytes` is what iterations_after counts. */
struct round {
  long size, bytes;
  int window;
  void *a, *b;
};

static void pingpong_round(const struct round* r) {
  if (rank == 0) {
    MPI_Send(r->a, (int)r->size, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
    MPI_Recv(r->b, (int)r->size, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (rank == 1) {
    MPI_Recv(r->b, (int)r->size, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Send(r->b, (int)r->size, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
  }
}

static void window_round(const struct round* r) {
  MPI_Request q[16];
  int ack = 0;
  if (rank == 0) {
    for (int w = 0; w < r->window; w++) MPI_Isend(r->a, (int)r->size, MPI_BYTE, 1, 2, MPI_COMM_WORLD, &q[w]);
    MPI_Waitall(r->window, q, MPI_STATUSES_IGNORE);
    MPI_Recv(&ack, 1, MPI_INT, 1, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (rank == 1) {
    for (int w = 0; w < r->window; w++) MPI_Irecv(r->b, (int)r->size, MPI_BYTE, 0, 2, MPI_COMM_WORLD, &q[w]);
    MPI_Waitall(r->window, q, MPI_STATUSES_IGNORE);
    MPI_Send(&ack, 1, MPI_INT, 0, 3, MPI_COMM_WORLD);
  }
}

static void allreduce_round(const struct round* r) {
  MPI_Allreduce(r->a, r->b, (int)(r->size / sizeof(float)), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
}

static void alltoall_round(const struct round* r) {
  int block = (int)(r->size / sizeof(int) / nranks);
  MPI_Alltoall(r->a, block, MPI_INT, r->b, block, MPI_INT, MPI_COMM_WORLD);
}

/* Seconds per round on the slowest rank; the first round (connection set-up, rendezvous
 * registration) is not counted. */
static double measure(void (*round)(const struct round*), const struct round* r) {
  MPI_Barrier(MPI_COMM_WORLD);
  double t0 = MPI_Wtime();
  round(r);
  int it = iterations_after(r->bytes, MPI_Wtime() - t0);
  MPI_Barrier(MPI_COMM_WORLD);
  t0 = MPI_Wtime();
  for (int n = 0; n < it; n++) round(r);
  return slowest((MPI_Wtime() - t0) / it);
}

static void latency(long size, char* a, char* b) {
  struct round r = {size, size, 1, a, b};
  for (long i = 0; i < size; i++) a[i] = (char)(i * 7 + size);
  double t = measure(pingpong_round, &r) / 2;
  if (rank == 0 && memcmp(a, b, size) != 0) fail("latency payload", size);
  row("latency", size, t, 1);
}

static void bandwidth(long size, char* a, char* b) {
  /* 16 messages in flight, fewer above 1 MiB (at most 16 MiB per window) */
  int window = size >= (16L << 20) ? 1 : size > (1L << 20) ? (int)((16L << 20) / size) : 16;
  struct round r = {size, size * window, window, a, b};
  double t = measure(window_round, &r) / window;
  if (rank == 1 && memcmp(a, b, size) != 0) fail("bandwidth payload", size);
  row("bandwidth", size, t, 1);
}

static void allreduce(long size, float* in, float* out) {
  int count = (int)(size / sizeof(float));
  struct round r = {size, size, 1, in, out};
  for (int i = 0; i < count; i++) in[i] = (float)((rank + 1) * (i % 1000));
  double t = measure(allreduce_round, &r);
  float ranks = (float)nranks * (nranks + 1) / 2;
  for (int i = 0; i < count; i++)
    if (out[i] != ranks * (float)(i % 1000)) fail("allreduce result", size);
  row("allreduce", size, t, 2.0 * (nranks - 1) / nranks);
}

static void alltoall(long size, int* in, int* out) {
  int block = (int)(size / sizeof(int) / nranks);
  struct round r = {size, size, 1, in, out};
  if (block == 0) return;
  for (int j = 0; j < nranks; j++)
    for (int i = 0; i < block; i++) in[(long)j * block + i] = rank * 1000003 + j * 7919 + i;
  double t = measure(alltoall_round, &r);
  for (int j = 0; j < nranks; j++)
    for (int i = 0; i < block; i++)
      if (out[(long)j * block + i] != j * 1000003 + rank * 7919 + i) fail("alltoall result", size);
  row("alltoall", size, t, (double)(nranks - 1) / nranks);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  long max = argc > 1 ? atol(argv[1]) : 64L << 20;
  if (nranks < 2 || max < 4) fail("needs 2 ranks and MAXBYTES >= 4", max);
  char* a = malloc(max);
  char* b = malloc(max);
  if (!a || !b) fail("malloc", max);
  if (rank == 0) printf("%-9s %12s %12s %9s %9s\n", "#op", "size", "time(us)", "algbw", "busbw");
  for (long s = 4; s <= max; s *= 4) latency(s, a, b);
  for (long s = 4; s <= max; s *= 4) bandwidth(s, a, b);
  for (long s = 4; s <= max; s *= 4) allreduce(s, (float*)a, (float*)b);
  for (long s = 4; s <= max; s *= 4) alltoall(s, (int*)a, (int*)b);
  free(a);
  free(b);
  MPI_Finalize();
  return 0;
}
