/* libcollplan_pmpi's control functions, for `collplan tune` and tests: the
   library's only exported names besides MPI's. Plain C, so a program finds
   them by linking the library (or with dlsym under LD_PRELOAD).

   collplan_pmpi_force(op, plan): from now on, calls of operation `op` (a
   table "op" name: broadcast, reduce, allgather, allreduce, reduce-scatter,
   scan, exscan; allgatherv goes with allgather) on this process ignore the
   table and go to `plan` — a name from the set's "plans", or "mpi" (the
   MPI library) — or back to the table when `plan` is NULL. A forced plan
   still serves only calls it can serve: a communicator of its size, an
   operator and datatype its properties allow; other calls fall back (and
   are counted so). Every rank of a communicator must force alike, as every
   rank must use the same table. Returns 0, or −1 when the set is not loaded
   (COLLPLAN_PLANS), −2 for an unknown operation, −3 for an unknown plan or
   one of another operation. Not for use while a collective is running.

   collplan_pmpi_counts(served, total): this process's intercepted calls so
   far, those served by a plan and all (both counts are kept only when
   COLLPLAN_PLANS or COLLPLAN_REPORT is set). */
#ifndef COLLPLAN_PMPI_CONTROL_H
#define COLLPLAN_PMPI_CONTROL_H

#ifdef __cplusplus
extern "C" {
#endif

int collplan_pmpi_force(const char* op, const char* plan);
void collplan_pmpi_counts(unsigned long long* served, unsigned long long* total);

#ifdef __cplusplus
}
#endif

#endif
