// FlashAttention(-1) forward, fp32 (Algorithm 1 of the FlashAttention paper): one CUDA block per
// head, K/V tiles on the outer loop j, blocks of Q on the inner loop i.
//
// This file is flashviz's source of truth for code: the viewer shows the regions between
// `// step: NAME` and `// end step` with the loop indices j and i substituted.
//
// Because Qi sits on the inner loop, nothing stays in shared memory from one visit of block i to the
// next: O, l and m live in HBM, are initialised there once (O = 0, l = 0, m = -inf), and every inner
// iteration reads Qi, Oi, li, mi and writes Oi, li, mi back. This is the "carried back and forth"
// that FlashAttention-2 removes by putting Qi on the outer loop. Like the paper, Oi is kept
// normalised: each iteration divides by the new li. Trips across HBM (elements, one head):
//   K, V read N*D           each tile is loaded once, by the outer loop
//   Q read Tc*N*D           every inner iteration loads Qi
//   O read Tc*N*D, written (Tc+1)*N*D     once to initialise, then every inner iteration
//   l, m read Tc*N, written (Tc+1)*N each
// One block per head is also FA1's parallelism: the blocks of Q of one head run one after another.
//
// Beyond the paper: N need not be a multiple of Br or Bc (rows >= N are neither loaded nor stored;
// missing key columns score -inf), and causal != 0 gives causal attention: for tile j the inner loop
// starts at the block holding row j*Bc (the blocks before it lie wholly above the diagonal), and
// scores of key column > query row are -inf. The counts above then become sums over the (i, j) pairs
// visited; K and V are still read once.
//
// Launch: grid (B*H), any blockDim.x >= Br, dynamic shared memory fa1_smem_bytes(Br, Bc, D).
// Layout: Q, K, V, O are (B*H, N, D) row-major float32; l, m are (B*H, N).

#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

// Bytes of shared memory the block claims: Qi, Oi (Br x D), Kj, Vj (Bc x D), Sij (Br x Bc), mi, li (Br).
#define fa1_smem_bytes(Br, Bc, D) (4 * (2 * (Br) * (D) + 2 * (Bc) * (D) + (Br) * (Bc) + 2 * (Br)))

template<int Br, int Bc, int D>
__global__ void fa1(const float* Q, const float* K, const float* V,
                    float* O, float* l, float* m, int N, float scale, int causal) {
    int bh = blockIdx.x, tid = threadIdx.x;
    Q += (size_t)bh*N*D; K += (size_t)bh*N*D; V += (size_t)bh*N*D;
    O += (size_t)bh*N*D; l += (size_t)bh*N; m += (size_t)bh*N;

    extern __shared__ float smem[];
    float (*Qi)[D]   = reinterpret_cast<float (*)[D]>(smem);   // [Br][D]
    float (*Oi)[D]   = Qi + Br;                                // [Br][D]
    float (*Kj)[D]   = Oi + Br;                                // [Bc][D]
    float (*Vj)[D]   = Kj + Bc;                                // [Bc][D]
    float (*Sij)[Bc] = reinterpret_cast<float (*)[Bc]>(Vj + Bc); // [Br][Bc]
    float *mi = &Sij[Br][0], *li = mi + Br;                    // [Br], [Br]

    int Tr = (N+Br-1)/Br, Tc = (N+Bc-1)/Bc;

    for (int i = 0; i < Tr; i++) {
        // step: init
        for (int x = tid; x < Br*D; x += blockDim.x)
            if (i*Br + x/D < N) O[(i*Br + x/D)*D + x%D] = 0.f;
        for (int r = tid; r < Br; r += blockDim.x)
            if (i*Br + r < N) { l[i*Br + r] = 0.f; m[i*Br + r] = -INFINITY; }
        // end step
    }
    __syncthreads();

    for (int j = 0; j < Tc; j++) {
        // step: load_kv
        for (int x = tid; x < Bc*D; x += blockDim.x) {
            bool row_in = j*Bc + x/D < N;
            Kj[x/D][x%D] = row_in ? K[(j*Bc + x/D)*D + x%D] : 0.f;
            Vj[x/D][x%D] = row_in ? V[(j*Bc + x/D)*D + x%D] : 0.f;
        }
        __syncthreads();
        // end step

        // causal: the blocks of Q before the one holding row j*Bc lie wholly above the diagonal
        for (int i = causal ? j*Bc/Br : 0; i < Tr; i++) {
            // step: load_qi
            for (int x = tid; x < Br*D; x += blockDim.x) {
                bool row_in = i*Br + x/D < N;
                Qi[x/D][x%D] = row_in ? Q[(i*Br + x/D)*D + x%D] : 0.f;
                Oi[x/D][x%D] = row_in ? O[(i*Br + x/D)*D + x%D] : 0.f;
            }
            for (int r = tid; r < Br; r += blockDim.x) {
                bool row_in = i*Br + r < N;
                li[r] = row_in ? l[i*Br + r] : 0.f;
                mi[r] = row_in ? m[i*Br + r] : -INFINITY;
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

            // step: update
            if (tid < Br) {
                float m_ij = -INFINITY;
                for (int c = 0; c < Bc; c++) m_ij = fmaxf(m_ij, Sij[tid][c]);
                float m_sub = m_ij == -INFINITY ? 0.f : m_ij;  // a row wholly masked (causal) adds nothing
                float l_ij = 0.f;
                for (int c = 0; c < Bc; c++) {
                    Sij[tid][c] = expf(Sij[tid][c] - m_sub);
                    l_ij += Sij[tid][c];
                }
                float m_new = fmaxf(mi[tid], m_ij);
                float alpha = expf(mi[tid] - m_new), beta = expf(m_ij - m_new);
                float l_new = alpha*li[tid] + beta*l_ij;
                for (int d = 0; d < D; d++) {
                    float pv = 0.f;
                    for (int c = 0; c < Bc; c++) pv += Sij[tid][c]*Vj[c][d];
                    Oi[tid][d] = (li[tid]*alpha*Oi[tid][d] + beta*pv) / l_new;
                }
                mi[tid] = m_new;
                li[tid] = l_new;
            }
            __syncthreads();
            // end step

            // step: write_back
            for (int x = tid; x < Br*D; x += blockDim.x)
                if (i*Br + x/D < N) O[(i*Br + x/D)*D + x%D] = Oi[x/D][x%D];
            for (int r = tid; r < Br; r += blockDim.x)
                if (i*Br + r < N) { l[i*Br + r] = li[r]; m[i*Br + r] = mi[r]; }
            __syncthreads();
            // end step
        }
    }
}

// Explicit instantiations so that `nvcc -c` emits real code; NVRTC instantiates any other
// <Br, Bc, D> by name expression at run time.
template __global__ void fa1<4, 4, 4>(const float*, const float*, const float*, float*, float*, float*, int, float, int);
template __global__ void fa1<32, 32, 64>(const float*, const float*, const float*, float*, float*, float*, int, float, int);
template __global__ void fa1<64, 64, 64>(const float*, const float*, const float*, float*, float*, float*, int, float, int);
