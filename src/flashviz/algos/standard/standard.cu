// Standard attention, fp32, in three kernels with S and P materialized in HBM (Algorithm 0 of the
// FlashAttention paper): what FlashAttention avoids. One head is (B*H) in gridDim.y of each launch.
//
//   1. standard_scores   S = scale * Q K^T                   grid (Tr, B*H)  S written
//   2. standard_softmax  P = softmax(S), one row at a time   grid (Tr, B*H)  S read, P written
//   3. standard_pv       O = P V                             grid (Tr, B*H)  P read, O written
//
// This file is flashviz's source of truth for code: the viewer shows the regions between
// `// step: NAME` and `// end step` with the loop indices (i, j, r) substituted.
//
// Blocking, and so the trips across HBM (elements, one head, not causal). Block i of every kernel
// owns rows i*Br .. of S, P and O, as FA2's block i owns those rows of O:
//   Q read N*D      kernel 1: block i loads Qi once and keeps it while it streams the tiles of K
//   K read Tr*N*D   kernel 1: every block streams all of K, one Bc x D tile at a time
//   S written N*N   kernel 1: each Sij tile is stored once;  S read N*N: kernel 2 loads each row once
//   P written N*N   kernel 2: each row once;                 P read N*N: kernel 3 loads each Pij once
//   V read Tr*N*D   kernel 3: every block streams all of V, one Bc x D tile at a time
//   O written N*D   kernel 3: block i stores Oi once
// Each of S and P therefore crosses HBM exactly once per pass. Q, K and V cannot all be read once:
// a score needs its row of Q and its row of K in the same block's shared memory at the same time, so
// with bounded shared memory one of Q and K is re-streamed (here K, once per block of Q, exactly as
// FA2 reads it; and likewise V in kernel 3). The paper's Theta(N*d + N^2) counts them once; the table
// of `flashviz compare` counts what these kernels move. No L is written: standard attention keeps P
// itself for the backward pass.
//
// Kernel 2 holds one whole row of S in shared memory (N floats), so that it is read once: the row's
// max and sum are only known after all of it has been seen. That caps N at about 58K on Hopper.
//
// Beyond the paper: N need not be a multiple of Br or Bc (rows >= N are neither loaded nor stored;
// tiles are short at the end), and causal != 0 gives causal attention: block i computes only the
// tiles j whose first column is <= its last row, i.e. the columns 0 .. W-1 with
// W = min(N, ((last row)/Bc + 1)*Bc); S, P are stored and loaded on exactly those columns, and the
// scores of key column > query row inside them are -inf (so P is 0 there).
//
// Layout: Q, K, V, O are (B*H, N, D) row-major float32; S, P are (B*H, N, N).

#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif

// Bytes of shared memory one block of each kernel claims (dynamic shared memory).
#define standard_scores_smem_bytes(Br, Bc, D) (4 * ((Br) * (D) + (Bc) * (D) + (Br) * (Bc)))   // Qi, Kj, Sij
#define standard_softmax_smem_bytes(N) (4 * ((N) + 2))                                       // Sr, mr, lr
#define standard_pv_smem_bytes(Br, Bc, D) (4 * ((Br) * (Bc) + (Bc) * (D) + (Br) * (D)))       // Pij, Vj, Oi

// Columns of S and P that block i's rows use: all N, or under causal up to the end of the tile that
// holds the block's last row.
__device__ __forceinline__ int standard_width(int i, int Br, int Bc, int N, int causal) {
    if (!causal) return N;
    int last_row = min(N, (i+1)*Br) - 1;
    return min(N, (last_row/Bc + 1)*Bc);
}

// Kernel 1. Launch: grid (Tr, B*H), any blockDim.x, dynamic shared memory standard_scores_smem_bytes.
template<int Br, int Bc, int D>
__global__ void standard_scores(const float* Q, const float* K, float* S, int N, float scale, int causal) {
    int i = blockIdx.x, bh = blockIdx.y, tid = threadIdx.x;
    Q += (size_t)bh*N*D; K += (size_t)bh*N*D; S += (size_t)bh*N*N;

    extern __shared__ float smem[];
    float (*Qi)[D]   = reinterpret_cast<float (*)[D]>(smem);    // [Br][D]
    float (*Kj)[D]   = Qi + Br;                                 // [Bc][D]
    float (*Sij)[Bc] = reinterpret_cast<float (*)[Bc]>(Kj + Bc); // [Br][Bc]

    int Tc = (standard_width(i, Br, Bc, N, causal) + Bc - 1)/Bc;

    // step: load_q
    for (int x = tid; x < Br*D; x += blockDim.x) {
        bool row_in = i*Br + x/D < N;
        Qi[x/D][x%D] = row_in ? Q[(i*Br + x/D)*D + x%D] : 0.f;
    }
    __syncthreads();
    // end step

    for (int j = 0; j < Tc; j++) {
        // step: load_k
        for (int x = tid; x < Bc*D; x += blockDim.x) {
            bool row_in = j*Bc + x/D < N;
            Kj[x/D][x%D] = row_in ? K[(j*Bc + x/D)*D + x%D] : 0.f;
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
            if (i*Br + r < N && j*Bc + c < N) S[(size_t)(i*Br + r)*N + j*Bc + c] = Sij[r][c];
        }
        __syncthreads();
        // end step
    }
}

// Kernel 2. Launch: grid (Tr, B*H), any blockDim.x, dynamic shared memory standard_softmax_smem_bytes(N).
template<int Br, int Bc>
__global__ void standard_softmax(const float* S, float* P, int N, int causal) {
    int i = blockIdx.x, bh = blockIdx.y, tid = threadIdx.x;
    S += (size_t)bh*N*N; P += (size_t)bh*N*N;

    extern __shared__ float smem[];
    float *Sr = smem;                      // [N]: one row of S, then of P
    float *mr = Sr + N, *lr = mr + 1;      // the row's max and sum

    int W = standard_width(i, Br, Bc, N, causal);

    for (int r = i*Br; r < min(N, (i+1)*Br); r++) {
        // step: softmax_row
        for (int c = tid; c < W; c += blockDim.x) Sr[c] = S[(size_t)r*N + c];
        __syncthreads();
        if (tid == 0) {
            float m = -INFINITY, l = 0.f;
            for (int c = 0; c < W; c++) m = fmaxf(m, Sr[c]);
            for (int c = 0; c < W; c++) l += expf(Sr[c] - m);
            *mr = m; *lr = l;
        }
        __syncthreads();
        for (int c = tid; c < W; c += blockDim.x) {
            Sr[c] = expf(Sr[c] - *mr) / *lr;
            P[(size_t)r*N + c] = Sr[c];
        }
        __syncthreads();
        // end step
    }
}

// Kernel 3. Launch: grid (Tr, B*H), any blockDim.x, dynamic shared memory standard_pv_smem_bytes.
template<int Br, int Bc, int D>
__global__ void standard_pv(const float* P, const float* V, float* O, int N, int causal) {
    int i = blockIdx.x, bh = blockIdx.y, tid = threadIdx.x;
    P += (size_t)bh*N*N; V += (size_t)bh*N*D; O += (size_t)bh*N*D;

    extern __shared__ float smem[];
    float (*Pij)[Bc] = reinterpret_cast<float (*)[Bc]>(smem);   // [Br][Bc]
    float (*Vj)[D]   = reinterpret_cast<float (*)[D]>(Pij + Br); // [Bc][D]
    float (*Oi)[D]   = Vj + Bc;                                 // [Br][D]

    int W = standard_width(i, Br, Bc, N, causal);
    int Tc = (W + Bc - 1)/Bc;
    for (int x = tid; x < Br*D; x += blockDim.x) Oi[x/D][x%D] = 0.f;

    for (int j = 0; j < Tc; j++) {
        // step: load_pv
        for (int x = tid; x < Br*Bc; x += blockDim.x) {
            bool live = i*Br + x/Bc < N && j*Bc + x%Bc < W;
            Pij[x/Bc][x%Bc] = live ? P[(size_t)(i*Br + x/Bc)*N + j*Bc + x%Bc] : 0.f;
        }
        for (int x = tid; x < Bc*D; x += blockDim.x) {
            bool row_in = j*Bc + x/D < N;
            Vj[x/D][x%D] = row_in ? V[(j*Bc + x/D)*D + x%D] : 0.f;
        }
        __syncthreads();
        // end step

        // step: accumulate
        for (int x = tid; x < Br*D; x += blockDim.x) {
            int r = x/D, d = x%D;
            float pv = 0.f;
            for (int c = 0; c < Bc; c++) pv += Pij[r][c]*Vj[c][d];
            Oi[r][d] += pv;
        }
        __syncthreads();
        // end step
    }

    // step: write_o
    for (int x = tid; x < Br*D; x += blockDim.x)
        if (i*Br + x/D < N) O[(i*Br + x/D)*D + x%D] = Oi[x/D][x%D];
    // end step
}

// Explicit instantiations so that `nvcc -c` emits real code; NVRTC instantiates any other
// <Br, Bc, D> by name expression at run time.
template __global__ void standard_scores<4, 4, 4>(const float*, const float*, float*, int, float, int);
template __global__ void standard_scores<64, 64, 64>(const float*, const float*, float*, int, float, int);
template __global__ void standard_softmax<4, 4>(const float*, float*, int, int);
template __global__ void standard_softmax<64, 64>(const float*, float*, int, int);
template __global__ void standard_pv<4, 4, 4>(const float*, const float*, float*, int, int);
template __global__ void standard_pv<64, 64, 64>(const float*, const float*, float*, int, int);
