// FlashAttention-2 forward, fp32, one CUDA block per Br rows of Q (block i).
//
// This file is flashviz's source of truth for code: the viewer shows the regions between
// `// step: NAME` and `// end step` with the loop indices i and j substituted, and the GPU
// runner compiles this same file with NVRTC. Beyond the seed's page: N need not be a multiple
// of Br or Bc (rows >= N are neither loaded nor stored; missing key columns score -inf), and
// shared memory is dynamic so that tiles larger than the 48 KB static limit can opt in, and
// causal != 0 gives causal attention: K/V tiles wholly above the diagonal are skipped, and the
// diagonal tiles are masked (key column > query row scores -inf).
//
// Launch: grid (Tr, B*H), any blockDim.x >= Br, dynamic shared memory fa2_smem_bytes(Br, Bc, D).
// Layout: Q, K, V, O are (B*H, N, D) row-major float32; L is (B*H, N).

#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

// Bytes of shared memory one block claims: Qi, Oi (Br x D), Kj, Vj (Bc x D), Sij (Br x Bc), mi, li (Br).
#define fa2_smem_bytes(Br, Bc, D) (4 * (2 * (Br) * (D) + 2 * (Bc) * (D) + (Br) * (Bc) + 2 * (Br)))

template<int Br, int Bc, int D>
__global__ void fa2(const float* Q, const float* K, const float* V,
                    float* O, float* L, int N, float scale, int causal) {
    int i = blockIdx.x, bh = blockIdx.y, tid = threadIdx.x;
    Q += (size_t)bh*N*D; K += (size_t)bh*N*D; V += (size_t)bh*N*D;
    O += (size_t)bh*N*D; L += (size_t)bh*N;

    extern __shared__ float smem[];
    float (*Qi)[D]   = reinterpret_cast<float (*)[D]>(smem);   // [Br][D]
    float (*Oi)[D]   = Qi + Br;                                // [Br][D]
    float (*Kj)[D]   = Oi + Br;                                // [Bc][D]
    float (*Vj)[D]   = Kj + Bc;                                // [Bc][D]
    float (*Sij)[Bc] = reinterpret_cast<float (*)[Bc]>(Vj + Bc); // [Br][Bc]
    float *mi = &Sij[Br][0], *li = mi + Br;                    // [Br], [Br]

    int Tc = (N+Bc-1)/Bc;
    // causal: stop at the tile holding block i's last row; the tiles after it are wholly masked
    if (causal) Tc = min(Tc, (min(N, (i+1)*Br) - 1)/Bc + 1);

    // step: load_q
    for (int x = tid; x < Br*D; x += blockDim.x) {
        bool row_in = i*Br + x/D < N;
        Qi[x/D][x%D] = row_in ? Q[(i*Br + x/D)*D + x%D] : 0.f;
        Oi[x/D][x%D] = 0.f;
    }
    if (tid < Br) { mi[tid] = -INFINITY; li[tid] = 0.f; }
    __syncthreads();
    // end step

    for (int j = 0; j < Tc; j++) {
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
            float s = 0.f;
            for (int k = 0; k < D; k++) s += Qi[r][k]*Kj[c][k];
            bool live = j*Bc + c < N && (!causal || j*Bc + c <= i*Br + r);
            Sij[r][c] = live ? s*scale : -INFINITY;
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

    // step: write_back
    if (tid < Br) {
        for (int d = 0; d < D; d++) Oi[tid][d] /= li[tid];
        if (i*Br + tid < N) L[i*Br + tid] = mi[tid] + logf(li[tid]);
    }
    __syncthreads();
    for (int x = tid; x < Br*D; x += blockDim.x)
        if (i*Br + x/D < N) O[(i*Br + x/D)*D + x%D] = Oi[x/D][x%D];
    // end step
}

// Explicit instantiations so that `nvcc -c` emits real code; NVRTC instantiates any other
// <Br, Bc, D> by name expression at run time.
template __global__ void fa2<4, 4, 4>(const float*, const float*, const float*, float*, float*, int, float, int);
template __global__ void fa2<32, 32, 64>(const float*, const float*, const float*, float*, float*, int, float, int);
template __global__ void fa2<64, 64, 64>(const float*, const float*, const float*, float*, float*, int, float, int);
