/* fi.MpiSmoke*: an MPI program that checks what it receives, run over the mroce provider (pml cm,
 * mtl ofi). Ping-pong between ranks 0 and 1 with payloads of 0 B to 4 MiB (eager and rendezvous),
 * synchronous sends, probes, MPI_Allreduce and MPI_Alltoall; every rank checks every result and
 * exits non-zero (MPI_Abort) at the first wrong byte. Mprobe/Mrecv of an MPI_Ssend is avoided: it
 * hangs in Open MPI 4.1.4's mtl ofi whatever the provider. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, nranks;

static void fail(const char* what, long at) {
  fprintf(stderr, "mpi_smoke: rank %d: %s (at %ld)\n", rank, what, at);
  MPI_Abort(MPI_COMM_WORLD, 1);
}

/* The byte i of message iter from rank src: differs per size, iteration and sender. */
static unsigned char pattern(int src, long size, int iter, long i) {
  return (unsigned char)((i * 131 + size * 7 + iter * 31 + src * 17) & 0xff);
}

static void fill(unsigned char* buf, int src, long size, int iter) {
  for (long i = 0; i < size; i++) buf[i] = pattern(src, size, iter, i);
}

static void check(const unsigned char* buf, int src, long size, int iter, const char* what) {
  for (long i = 0; i < size; i++)
    if (buf[i] != pattern(src, size, iter, i)) fail(what, i);
}

static void pingpong(void) {
  static const long sizes[] = {0, 1, 8, 255, 4096, 65536, 65537, 262144, 1048576, 4194304};
  const long max = 4194304;
  if (rank > 1) return;
  unsigned char* out = malloc(max);
  unsigned char* in = malloc(max);
  if (!out || !in) fail("malloc", 0);
  int peer = rank == 0 ? 1 : 0;
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    long size = sizes[s];
    for (int iter = 0; iter < 10; iter++) {
      MPI_Status st;
      int count;
      fill(out, rank, size, iter);
      memset(in, 0xEE, size);
      if (rank == 0) {
        MPI_Send(out, (int)size, MPI_BYTE, peer, iter, MPI_COMM_WORLD);
        MPI_Recv(in, (int)max, MPI_BYTE, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      } else {
        MPI_Recv(in, (int)max, MPI_BYTE, peer, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
        MPI_Send(out, (int)size, MPI_BYTE, peer, iter, MPI_COMM_WORLD);
      }
      MPI_Get_count(&st, MPI_BYTE, &count);
      if (count != size || st.MPI_TAG != iter || st.MPI_SOURCE != peer) fail("pingpong status", size);
      check(in, peer, size, iter, "pingpong payload");
    }
  }
  free(out);
  free(in);
  if (rank == 0) printf("mpi_smoke: pingpong 0 B .. 4 MiB x 10 ok\n");
}

/* Synchronous sends (the mtl's ACK message) and probes: rank 1 sends 3 tags with MPI_Ssend, rank 0
 * takes them in the reverse tag order after an MPI_Probe / MPI_Iprobe for each. */
static void ssend_probe(void) {
  unsigned char buf[3][3000];
  if (rank == 1) {
    MPI_Request r[3];
    for (int t = 0; t < 3; t++) {
      fill(buf[t], rank, 1000 * (t + 1), t);
      MPI_Issend(buf[t], 1000 * (t + 1), MPI_BYTE, 0, 100 + t, MPI_COMM_WORLD, &r[t]);
    }
    MPI_Waitall(3, r, MPI_STATUSES_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
  } else if (rank == 0) {
    for (int t = 2; t >= 0; t--) {
      MPI_Status st;
      int count, flag = 0;
      if (t == 1) {
        while (!flag) MPI_Iprobe(1, 100 + t, MPI_COMM_WORLD, &flag, &st);
      } else {
        MPI_Probe(1, 100 + t, MPI_COMM_WORLD, &st);
      }
      MPI_Get_count(&st, MPI_BYTE, &count);
      if (count != 1000 * (t + 1)) fail("probe count", t);
      MPI_Recv(buf[t], count, MPI_BYTE, 1, 100 + t, MPI_COMM_WORLD, &st);
      check(buf[t], 1, count, t, "ssend payload");
    }
    MPI_Barrier(MPI_COMM_WORLD);
    printf("mpi_smoke: ssend + probe ok\n");
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
  }
}

static void collectives(void) {
  static const int counts[] = {1, 7, 1024, 65536, 1 << 20};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    int n = counts[c];
    int64_t* in = malloc(sizeof(int64_t) * n);
    int64_t* out = malloc(sizeof(int64_t) * n);
    if (!in || !out) fail("malloc", n);
    for (int i = 0; i < n; i++) in[i] = (int64_t)(rank + 1) * (i + 3);
    MPI_Allreduce(in, out, n, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    int64_t ranks = (int64_t)nranks * (nranks + 1) / 2;
    for (int i = 0; i < n; i++)
      if (out[i] != ranks * (i + 3)) fail("allreduce result", i);
    free(in);
    free(out);
  }
  /* Alltoall: block j of rank r holds (r, j, i); rank r receives block r of every rank. */
  static const int blocks[] = {1, 100, 16384, 262144};
  for (size_t c = 0; c < sizeof blocks / sizeof blocks[0]; c++) {
    int n = blocks[c];
    int32_t* in = malloc(sizeof(int32_t) * n * nranks);
    int32_t* out = malloc(sizeof(int32_t) * n * nranks);
    if (!in || !out) fail("malloc", n);
    for (int j = 0; j < nranks; j++)
      for (int i = 0; i < n; i++) in[(long)j * n + i] = rank * 1000003 + j * 7919 + i;
    MPI_Alltoall(in, n, MPI_INT32_T, out, n, MPI_INT32_T, MPI_COMM_WORLD);
    for (int j = 0; j < nranks; j++)
      for (int i = 0; i < n; i++)
        if (out[(long)j * n + i] != j * 1000003 + rank * 7919 + i) fail("alltoall result", (long)j * n + i);
    free(in);
    free(out);
  }
  if (rank == 0) printf("mpi_smoke: allreduce + alltoall ok\n");
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &nranks);
  if (nranks < 2) fail("needs 2 ranks", nranks);
  pingpong();
  ssend_probe();
  collectives();
  MPI_Barrier(MPI_COMM_WORLD);
  printf("mpi_smoke: rank %d of %d ok\n", rank, nranks);
  MPI_Finalize();
  return 0;
}
