// FlashAttention-2 backward, fp32: a preprocessing kernel, then one CUDA block per Bc columns of K/V (block j).
//
// Given Q, K, V, the forward's O and L (log-sum-exp per row) and the upstream gradient dO, compute
// dQ, dK, dV. The forward's single array L is what makes this cheap: Pij = exp(Sij - Li) is rebuilt
// exactly, tile by tile, with no running max and no second pass over the scores.
//
// 1. fa2_bwd_preprocess (grid Tr): Deltai = rowsum(dOi * Oi) per row, written to the HBM array Delta (the
//    FA2 paper's D; Delta here and in the trace, because D is the head dimension), and dQ zeroed, since the main
//    kernel only ever adds into it.
// 2. fa2_bwd (grid Tc): block j loads Kj and Vj once and keeps dKj = dVj = 0 in shared memory; then for
//    every block i of Q it loads Qi, dOi, Li, Deltai and
//        Pij = exp(scale * Qi Kj^T - Li),  dVj += Pij^T dOi,  dSij = Pij * (dOi Vj^T - Deltai),
//        dKj += scale * dSij^T Qi,         dQ[i] += scale * dSij Kj   (atomicAdd into HBM),
//    and finally writes dKj and dVj once. dKj and dVj never leave shared memory until then; dQi is
//    shared by every block j, so it is accumulated in HBM with atomic adds.
//
// Counting HBM trips (flashviz's counters and traffic/fa2_backward.py): one atomicAdd of one element is
// one read and one write of dQ (a read-modify-write of that element). The zeros the preprocessing
// kernel writes into dQ count as N*D writes. Rows >= N are never loaded or stored (ragged N): padding
// rows of Qi and dOi are zero and their Pij is 0. causal != 0 gives causal attention: block j skips the
// blocks i whose last row is before its first column j*Bc (wholly above the diagonal), and masks key
// column > query row on the diagonal tiles (Pij = 0 there).
//
// Launch 1: fa2_bwd_preprocess<Br, D>, grid (Tr, B*H), any blockDim.x >= Br, dynamic shared memory
//           fa2_bwd_preprocess_smem_bytes(Br, D).
// Launch 2: fa2_bwd<Br, Bc, D>, grid (Tc, B*H), any blockDim.x >= 1, dynamic shared memory
//           fa2_bwd_smem_bytes(Br, Bc, D).
// Layout: Q, K, V, O, dO, dQ, dK, dV are (B*H, N, D) row-major float32; L and Delta are (B*H, N).

// Bytes of shared memory one preprocessing block claims: dOi, Oi (Br x D), Deltai (Br).
#define fa2_bwd_preprocess_smem_bytes(Br, D) (4 * (2 * (Br) * (D) + (Br)))
// Bytes of shared memory one main block claims: Kj, Vj, dKj, dVj (Bc x D), Qi, dOi (Br x D),
// Pij, dSij (Br x Bc), Li, Deltai (Br).
#define fa2_bwd_smem_bytes(Br, Bc, D) (4 * (4 * (Bc) * (D) + 2 * (Br) * (D) + 2 * (Br) * (Bc) + 2 * (Br)))

template<int Br, int D>
__global__ void fa2_bwd_preprocess(const float* O, const float* dO, float* Delta, float* dQ, int N) {
    int i = blockIdx.x, bh = blockIdx.y, tid = threadIdx.x;
    O += (size_t)bh*N*D; dO += (size_t)bh*N*D; dQ += (size_t)bh*N*D; Delta += (size_t)bh*N;

    extern __shared__ float smem[];
    float (*dOi)[D] = reinterpret_cast<float (*)[D]>(smem);   // [Br][D]
    float (*Oi)[D]  = dOi + Br;                               // [Br][D]
    float *Deltai = &Oi[Br][0];                                   // [Br]

    // step: load_do_o
    for (int x = tid; x < Br*D; x += blockDim.x) {
        bool row_in = i*Br + x/D < N;
        dOi[x/D][x%D] = row_in ? dO[(i*Br + x/D)*D + x%D] : 0.f;
        Oi[x/D][x%D]  = row_in ? O[(i*Br + x/D)*D + x%D] : 0.f;
    }
    __syncthreads();
    // end step

    // step: write_delta
    if (tid < Br) {
        float s = 0.f;
        for (int d = 0; d < D; d++) s += dOi[tid][d]*Oi[tid][d];
        Deltai[tid] = s;
        if (i*Br + tid < N) Delta[i*Br + tid] = s;
    }
    for (int x = tid; x < Br*D; x += blockDim.x)
        if (i*Br + x/D < N) dQ[(i*Br + x/D)*D + x%D] = 0.f;
    // end step
}

template<int Br, int Bc, int D>
__global__ void fa2_bwd(const float* Q, const float* K, const float* V, const float* dO,
                        const float* L, const float* Delta, float* dQ, float* dK, float* dV,
                        int N, float scale, int causal) {
    int j = blockIdx.x, bh = blockIdx.y, tid = threadIdx.x;
    Q += (size_t)bh*N*D; K += (size_t)bh*N*D; V += (size_t)bh*N*D; dO += (size_t)bh*N*D;
    dQ += (size_t)bh*N*D; dK += (size_t)bh*N*D; dV += (size_t)bh*N*D;
    L += (size_t)bh*N; Delta += (size_t)bh*N;

    extern __shared__ float smem[];
    float (*Kj)[D]    = reinterpret_cast<float (*)[D]>(smem);    // [Bc][D]
    float (*Vj)[D]    = Kj + Bc;                                 // [Bc][D]
    float (*dKj)[D]   = Vj + Bc;                                 // [Bc][D]
    float (*dVj)[D]   = dKj + Bc;                                // [Bc][D]
    float (*Qi)[D]    = dVj + Bc;                                // [Br][D]
    float (*dOi)[D]   = Qi + Br;                                 // [Br][D]
    float (*Pij)[Bc]  = reinterpret_cast<float (*)[Bc]>(dOi + Br); // [Br][Bc]
    float (*dSij)[Bc] = Pij + Br;                                // [Br][Bc]
    float *Li = &dSij[Br][0], *Deltai = Li + Br;                     // [Br], [Br]

    int Tr = (N+Br-1)/Br;
    // causal: start at the block holding row j*Bc, tile j's first column; the blocks before it are wholly masked
    int i0 = causal ? j*Bc/Br : 0;

    // step: load_kv
    for (int x = tid; x < Bc*D; x += blockDim.x) {
        bool row_in = j*Bc + x/D < N;
        Kj[x/D][x%D] = row_in ? K[(j*Bc + x/D)*D + x%D] : 0.f;
        Vj[x/D][x%D] = row_in ? V[(j*Bc + x/D)*D + x%D] : 0.f;
        dKj[x/D][x%D] = 0.f;
        dVj[x/D][x%D] = 0.f;
    }
    __syncthreads();
    // end step

    for (int i = i0; i < Tr; i++) {
        // step: load_q
        for (int x = tid; x < Br*D; x += blockDim.x) {
            bool row_in = i*Br + x/D < N;
            Qi[x/D][x%D]  = row_in ? Q[(i*Br + x/D)*D + x%D] : 0.f;
            dOi[x/D][x%D] = row_in ? dO[(i*Br + x/D)*D + x%D] : 0.f;
        }
        for (int r = tid; r < Br; r += blockDim.x) {
            bool row_in = i*Br + r < N;
            Li[r] = row_in ? L[i*Br + r] : 0.f;
            Deltai[r] = row_in ? Delta[i*Br + r] : 0.f;
        }
        __syncthreads();
        // end step

        // step: probs
        for (int x = tid; x < Br*Bc; x += blockDim.x) {
            int r = x/Bc, c = x%Bc;
            float s = 0.f;
            for (int k = 0; k < D; k++) s += Qi[r][k]*Kj[c][k];
            bool live = i*Br + r < N && j*Bc + c < N && (!causal || j*Bc + c <= i*Br + r);
            Pij[r][c] = live ? expf(s*scale - Li[r]) : 0.f;
        }
        __syncthreads();
        // end step

        // step: dv
        for (int x = tid; x < Bc*D; x += blockDim.x) {
            int c = x/D, d = x%D;
            float acc = 0.f;
            for (int r = 0; r < Br; r++) acc += Pij[r][c]*dOi[r][d];
            dVj[c][d] += acc;
        }
        __syncthreads();
        // end step

        // step: ds
        for (int x = tid; x < Br*Bc; x += blockDim.x) {
            int r = x/Bc, c = x%Bc;
            float dp = 0.f;
            for (int k = 0; k < D; k++) dp += dOi[r][k]*Vj[c][k];
            dSij[r][c] = Pij[r][c]*(dp - Deltai[r]);
        }
        __syncthreads();
        // end step

        // step: dk
        for (int x = tid; x < Bc*D; x += blockDim.x) {
            int c = x/D, d = x%D;
            float acc = 0.f;
            for (int r = 0; r < Br; r++) acc += dSij[r][c]*Qi[r][d];
            dKj[c][d] += scale*acc;
        }
        __syncthreads();
        // end step

        // step: dq
        for (int x = tid; x < Br*D; x += blockDim.x) {
            int r = x/D, d = x%D;
            if (i*Br + r >= N) continue;
            float acc = 0.f;
            for (int c = 0; c < Bc; c++) acc += dSij[r][c]*Kj[c][d];
            atomicAdd(&dQ[(i*Br + r)*D + d], scale*acc);
        }
        __syncthreads();
        // end step
    }

    // step: write_back
    for (int x = tid; x < Bc*D; x += blockDim.x) {
        if (j*Bc + x/D >= N) continue;
        dK[(j*Bc + x/D)*D + x%D] = dKj[x/D][x%D];
        dV[(j*Bc + x/D)*D + x%D] = dVj[x/D][x%D];
    }
    // end step
}

// Explicit instantiations so that `nvcc -c` emits real code; NVRTC instantiates any other
// <Br, Bc, D> by name expression at run time.
template __global__ void fa2_bwd_preprocess<4, 4>(const float*, const float*, float*, float*, int);
template __global__ void fa2_bwd_preprocess<32, 64>(const float*, const float*, float*, float*, int);
template __global__ void fa2_bwd_preprocess<64, 64>(const float*, const float*, float*, float*, int);
template __global__ void fa2_bwd<4, 4, 4>(const float*, const float*, const float*, const float*, const float*,
                                          const float*, float*, float*, float*, int, float, int);
template __global__ void fa2_bwd<32, 32, 64>(const float*, const float*, const float*, const float*, const float*,
                                             const float*, float*, float*, float*, int, float, int);
template __global__ void fa2_bwd<64, 64, 64>(const float*, const float*, const float*, const float*, const float*,
                                             const float*, float*, float*, float*, int, float, int);
