"""Function-name pools and per-name source locations for the synthetic call trees."""
from __future__ import annotations

import zlib

MPI_NAMES = """MPI_Allreduce MPI_Wait MPI_Waitall MPI_Isend MPI_Irecv MPI_Send MPI_Recv MPI_Barrier
MPI_Bcast MPI_Reduce MPI_Sendrecv MPI_Alltoall MPI_Alltoallv MPI_Allgather MPI_Allgatherv MPI_Test
MPI_Iprobe MPI_Gather MPI_Scatter MPI_Comm_rank MPI_Comm_size MPI_Wtime MPI_Reduce_scatter
MPI_Exscan MPI_Iallreduce MPI_Ibcast MPI_Get_count""".split()
SOLVER_NAMES = """advance_timestep solve_pressure hypre_PCGSolve hypre_BoomerAMGSolve
hypre_BoomerAMGSetup hypre_ParCSRMatrixMatvec hypre_BoomerAMGRelax CalcForceForNodes
CalcVolumeForceForElems LagrangeNodal LagrangeElements CalcHourglassControlForElems
IntegrateStressForElems CalcKinematicsForElems CalcQForElems EvalEOSForElems
ApplyMaterialPropertiesForElems TimeIncrement apply_stencil_3d exchange_halo compute_residual
update_velocity assemble_matrix compute_fluxes interpolate_to_faces gmres_iterate precondition_ilu
jacobi_smooth restrict_residual prolongate_correction compute_dt apply_boundary_conditions
write_checkpoint read_input_deck init_mesh partition_domain compute_eos fft_forward_3d
fft_backward_3d transpose_pencils pack_buffers unpack_buffers compute_density build_neighbor_list
pair_lj_compute verlet_integrate reduce_diagnostics output_fields dgemm_ dgemv_ ddot_ daxpy_ dnrm2_
spmv_csr multigrid_vcycle coarsen_level smooth_level compute_gradients limit_slopes
riemann_solve_hllc update_conserved compute_viscosity setup_communicators load_balance refine_mesh
regrid particle_push deposit_charge solve_poisson compute_energy checkpoint_restart""".split()
STD_NAMES = """std::vector<double>::resize|std::vector<int>::push_back|std::vector<double>::reserve
|std::sort<std::vector<int>::iterator>|std::sort<double*>|std::map<int, double>::operator[]
|std::unordered_map<std::string, int>::find|std::__introsort_loop<int*, long>
|std::copy<double*, double*>|std::fill<double*, double>|std::shared_ptr<Mesh>::reset
|std::basic_string<char>::append|std::vector<double>::operator=|std::allocator<double>::allocate
|std::unique_ptr<Field>::reset|std::transform<double*, double*>|std::accumulate<double*, double>
|std::vector<std::array<double, 3>>::emplace_back""".replace("\n", "").split("|")
SOLVER_STEMS = ["compute_kernel", "update_block", "loop_body", "local_solve", "flux_patch",
                "halo_stage", "stage_rk", "bc_face"]
MPI, SOLVER, STD = 0, 1, 2
ROOT_NAME = "main"
FRAME_NAMES = ("MPI_Init", "MPI_Finalize")  # first and last child of main, never dropped
ROOT_FILE, ROOT_LINE = "main.cpp", 19

_STD_FILES = [("std::sort", "stl_algo.h"), ("__introsort", "stl_algo.h"), ("std::map", "stl_map.h"),
              ("unordered_map", "hashtable.h"), ("basic_string", "basic_string.h"),
              ("shared_ptr", "shared_ptr.h"), ("unique_ptr", "unique_ptr.h"),
              ("allocator", "new_allocator.h"), ("std::vector", "stl_vector.h")]
_SOLVER_FILES = [("hypre_PCG", "pcg.c"), ("hypre_BoomerAMG", "par_amg_solve.c"),
                 ("hypre_ParCSR", "par_csr_matvec.c"), ("Calc", "lulesh.cc"), ("Lagrange", "lulesh.cc"),
                 ("Integrate", "lulesh.cc"), ("EvalEOS", "lulesh.cc"), ("ApplyMaterial", "lulesh.cc"),
                 ("TimeIncrement", "lulesh.cc"), ("fft", "fft3d.cpp"), ("transpose", "fft3d.cpp"),
                 ("pair_", "pair_lj.cpp"), ("verlet", "integrate.cpp"), ("neighbor", "neighbor.cpp"),
                 ("halo", "halo_exchange.cpp"), ("pack", "halo_exchange.cpp"), ("solve_pressure", "solver.cpp")]
_GENERIC_FILES = ["solver.cpp", "stencil.cpp", "mesh.cpp", "timestep.cpp", "physics.cpp",
                  "boundary.cpp", "io.cpp", "multigrid.cpp", "kernels.cpp", "blas_kernels.c", "eos.f90"]


def _crc(text: str) -> int:
    return zlib.crc32(text.encode("utf-8"))


def category(name: str) -> int:
    """MPI, SOLVER or STD category of a function name."""
    if name.startswith("MPI_"):
        return MPI
    return STD if name.startswith("std::") else SOLVER


def source_location(name: str) -> tuple[str, int, int]:
    """(file, first line, last line) of a function: a pure function of its name."""
    if name == ROOT_NAME:
        return ROOT_FILE, ROOT_LINE, 60
    cat = category(name)
    rules = _STD_FILES if cat == STD else _SOLVER_FILES
    file = "mpi.h" if cat == MPI else None
    for key, f in rules if file is None else ():
        if key in name:
            file = f
            break
    if file is None:
        file = _GENERIC_FILES[_crc(name + "#file") % len(_GENERIC_FILES)]
    line = 1 + _crc(name) % 2000
    return file, line, line + 3 + _crc(name + "#end") % 150


_RETURNS = ["void", "void", "void", "int", "double"]
_ARGS = ["", "int", "double *, int", "const Mesh &", "Domain &, double", "int, int, double *",
         "const double *, double *, int", "Field &, const Field &"]


def signature(name: str) -> str:
    """A C/C++ prototype for a function name (a pure function of the name)."""
    if name == ROOT_NAME:
        return "int main(int, char **)"
    if category(name) == MPI:
        return name + "()"
    if category(name) == STD:
        return f"void {name}({['', 'size_t', 'const value_type &'][_crc(name + '#args') % 3]})"
    if name.endswith("_"):  # Fortran BLAS-like
        return f"void {name}(int *, double *, double *, int *)"
    return f"{_RETURNS[_crc(name + '#ret') % len(_RETURNS)]} {name}({_ARGS[_crc(name + '#args') % len(_ARGS)]})"
