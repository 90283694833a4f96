// Flash-Decoding (split-KV) forward, fp32: FA2's loop with the K/V sequence cut into S chunks of
// CHUNK = 2 tiles (S = ceil(Tc / 2)), each chunk run by its own block, then a combine kernel.
//
// Kernel 1, fa2_splitkv: grid (Tr, S, B*H). Block (i, s) loads Qi, runs FA2's online softmax over
// the tiles j = 2s, 2s+1 of its chunk only, and writes a partial result to HBM: Opart[s] = Oi / li
// and Lpart[s] = mi + log li (the log-sum-exp of its scores), for the rows of block i.
// Kernel 2, fa2_splitkv_combine: grid (Tr, B*H). Block i reads the S partials of its rows in turn
// and merges them with the log-sum-exp rule (flashviz.merge, the rule ring attention uses):
//   m = max(Lc, Ls), Lnew = m + log(e^(Lc-m) + e^(Ls-m)), Oc = e^(Lc-Lnew) Oc + e^(Ls-Lnew) Os.
// The split buys parallelism when Tr is small (decoding: one block of Q), at the price of the
// partials' trip through HBM (written once, read once). N need not be a multiple of Br or Bc; no causal mask.
//
// Layout: Q, K, V, O (B*H, N, D), L (B*H, N), Opart (B*H, S, N, D), Lpart (B*H, S, N), row-major float32.

#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

#define FA2_SPLITKV_CHUNK 2

// Shared memory of a split block: Qi, Oi (Br x D), Kj, Vj (Bc x D), Sij (Br x Bc), mi, li (Br); as fa2's.
#define fa2_splitkv_smem_bytes(Br, Bc, D) (4 * (2 * (Br) * (D) + 2 * (Bc) * (D) + (Br) * (Bc) + 2 * (Br)))
// Shared memory of a combine block: Oc, Os (Br x D), Lc, Ls (Br).
#define fa2_splitkv_combine_smem_bytes(Br, D) (4 * (2 * (Br) * (D) + 2 * (Br)))

template<int Br, int Bc, int D>
__global__ void fa2_splitkv(const float* Q, const float* K, const float* V,
                            float* Opart, float* Lpart, int N, float scale) {
    int i = blockIdx.x, s = blockIdx.y, S = gridDim.y, bh = blockIdx.z, tid = threadIdx.x;
    Q += (size_t)bh*N*D; K += (size_t)bh*N*D; V += (size_t)bh*N*D;
    Opart += ((size_t)bh*S + s)*N*D; Lpart += ((size_t)bh*S + s)*N;

    extern __shared__ float smem[];
    float (*Qi)[D]   = reinterpret_cast<float (*)[D]>(smem);   // [Br][D]
    float (*Oi)[D]   = Qi + Br;                                // [Br][D]
    float (*Kj)[D]   = Oi + Br;                                // [Bc][D]
    float (*Vj)[D]   = Kj + Bc;                                // [Bc][D]
    float (*Sij)[Bc] = reinterpret_cast<float (*)[Bc]>(Vj + Bc); // [Br][Bc]
    float *mi = &Sij[Br][0], *li = mi + Br;                    // [Br], [Br]

    int Tc = (N+Bc-1)/Bc;
    int j0 = s*FA2_SPLITKV_CHUNK, j1 = min(Tc, j0 + FA2_SPLITKV_CHUNK);  // this block's chunk of tiles

    // step: load_q
    for (int x = tid; x < Br*D; x += blockDim.x) {
        bool row_in = i*Br + x/D < N;
        Qi[x/D][x%D] = row_in ? Q[(i*Br + x/D)*D + x%D] : 0.f;
        Oi[x/D][x%D] = 0.f;
    }
    if (tid < Br) { mi[tid] = -INFINITY; li[tid] = 0.f; }
    __syncthreads();
    // end step

    for (int j = j0; j < j1; j++) {
        // step: load_kv
        for (int x = tid; x < Bc*D; x += blockDim.x) {
            bool row_in = j*Bc + x/D < N;
            Kj[x/D][x%D] = row_in ? K[(j*Bc + x/D)*D + x%D] : 0.f;
            Vj[x/D][x%D] = row_in ? V[(j*Bc + x/D)*D + x%D] : 0.f;
        }
        __syncthreads();
        // end step

        // step: scores
        for (int x = tid; x < Br*Bc; x += blockDim.x) {
            int r = x/Bc, c = x%Bc;
            float acc = 0.f;
            for (int k = 0; k < D; k++) acc += Qi[r][k]*Kj[c][k];
            Sij[r][c] = j*Bc + c < N ? acc*scale : -INFINITY;
        }
        __syncthreads();
        // end step

        // step: online_softmax
        if (tid < Br) {
            float m_ij = -INFINITY;
            for (int c = 0; c < Bc; c++) m_ij = fmaxf(m_ij, Sij[tid][c]);
            float m_new = fmaxf(mi[tid], m_ij);
            float alpha = expf(mi[tid] - m_new);
            float lsum = 0.f;
            for (int c = 0; c < Bc; c++) {
                Sij[tid][c] = expf(Sij[tid][c] - m_new);
                lsum += Sij[tid][c];
            }
            li[tid] = alpha*li[tid] + lsum;
            for (int d = 0; d < D; d++) {
                float pv = 0.f;
                for (int c = 0; c < Bc; c++) pv += Sij[tid][c]*Vj[c][d];
                Oi[tid][d] = alpha*Oi[tid][d] + pv;
            }
            mi[tid] = m_new;
        }
        __syncthreads();
        // end step
    }

    // step: write_partial
    if (tid < Br) {
        for (int d = 0; d < D; d++) Oi[tid][d] /= li[tid];
        if (i*Br + tid < N) Lpart[i*Br + tid] = mi[tid] + logf(li[tid]);
    }
    __syncthreads();
    for (int x = tid; x < Br*D; x += blockDim.x)
        if (i*Br + x/D < N) Opart[(i*Br + x/D)*D + x%D] = Oi[x/D][x%D];
    // end step
}

template<int Br, int D>
__global__ void fa2_splitkv_combine(const float* Opart, const float* Lpart, float* O, float* L, int N, int S) {
    int i = blockIdx.x, bh = blockIdx.y, tid = threadIdx.x;
    Opart += (size_t)bh*S*N*D; Lpart += (size_t)bh*S*N;
    O += (size_t)bh*N*D; L += (size_t)bh*N;

    extern __shared__ float smem[];
    float (*Oc)[D] = reinterpret_cast<float (*)[D]>(smem);     // [Br][D] the merged output so far
    float (*Os)[D] = Oc + Br;                                  // [Br][D] partial s
    float *Lc = &Os[Br][0], *Ls = Lc + Br;                     // [Br], [Br]

    // step: load_first
    for (int x = tid; x < Br*D; x += blockDim.x) {
        bool row_in = i*Br + x/D < N;
        Oc[x/D][x%D] = row_in ? Opart[(i*Br + x/D)*D + x%D] : 0.f;
    }
    if (tid < Br) Lc[tid] = i*Br + tid < N ? Lpart[i*Br + tid] : 0.f;
    __syncthreads();
    // end step

    for (int s = 1; s < S; s++) {
        // step: load_partial
        for (int x = tid; x < Br*D; x += blockDim.x) {
            bool row_in = i*Br + x/D < N;
            Os[x/D][x%D] = row_in ? Opart[((size_t)s*N + i*Br + x/D)*D + x%D] : 0.f;
        }
        if (tid < Br) Ls[tid] = i*Br + tid < N ? Lpart[(size_t)s*N + i*Br + tid] : 0.f;
        __syncthreads();
        // end step

        // step: merge
        if (tid < Br) {
            float m = fmaxf(Lc[tid], Ls[tid]);
            float wc = expf(Lc[tid] - m), ws = expf(Ls[tid] - m);
            float total = wc + ws;
            float L_new = m + logf(total);
            float ac = wc/total, as = ws/total;
            for (int d = 0; d < D; d++) Oc[tid][d] = Oc[tid][d]*ac + Os[tid][d]*as;
            Lc[tid] = L_new;
        }
        __syncthreads();
        // end step
    }

    // step: write_out
    for (int x = tid; x < Br*D; x += blockDim.x)
        if (i*Br + x/D < N) O[(i*Br + x/D)*D + x%D] = Oc[x/D][x%D];
    if (tid < Br && i*Br + tid < N) L[i*Br + tid] = Lc[tid];
    // end step
}

// Explicit instantiations so that `nvcc -c` emits real code; NVRTC instantiates any other by name at run time.
template __global__ void fa2_splitkv<4, 4, 4>(const float*, const float*, const float*, float*, float*, int, float);
template __global__ void fa2_splitkv<64, 64, 64>(const float*, const float*, const float*, float*, float*, int, float);
template __global__ void fa2_splitkv_combine<4, 4>(const float*, const float*, float*, float*, int, int);
template __global__ void fa2_splitkv_combine<64, 64>(const float*, const float*, float*, float*, int, int);
