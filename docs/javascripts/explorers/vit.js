// The book's VisionTransformer (vitbook/model.py) forward pass in plain JavaScript, for the
// explorers that run a trained model in the page. Weights come from the engine under the
// model's own state_dict names (patch_embed.proj.weight, blocks.0.attn.qkv.weight, ...) and
// the config in meta.cfg. Arithmetic in float64; the model computes in float32, so results
// agree to about 1e-6.

/** erf(x) in double precision: Taylor series near zero, Lentz continued fraction for erfc. */
export function erf(x) {
  const z = Math.abs(x);
  let r;
  if (z < 3) {
    // erf z = 2/sqrt(pi) * sum_n (-1)^n z^(2n+1) / (n! (2n+1))
    let term = z;
    let sum = z;
    const z2 = z * z;
    for (let n = 1; n < 200; n++) {
      term *= -z2 / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    r = (2 / Math.sqrt(Math.PI)) * sum;
  } else {
    // erfc z = exp(-z^2)/sqrt(pi) / (z + (1/2)/(z + 1/(z + (3/2)/(z + 2/(z + ...)))))
    let f = z;
    for (let n = 120; n >= 1; n--) f = z + n / 2 / f;
    r = 1 - Math.exp(-z * z) / Math.sqrt(Math.PI) / f;
  }
  return x < 0 ? -r : r;
}

/** nn.GELU() (the exact form the model uses): x * Phi(x). */
export function gelu(x) {
  return 0.5 * x * (1 + erf(x * Math.SQRT1_2));
}

function layerNorm(x, T, D, w, b, eps) {
  const out = new Float64Array(T * D);
  for (let t = 0; t < T; t++) {
    let mean = 0;
    for (let d = 0; d < D; d++) mean += x[t * D + d];
    mean /= D;
    let v = 0;
    for (let d = 0; d < D; d++) v += (x[t * D + d] - mean) ** 2;
    v /= D;
    const inv = 1 / Math.sqrt(v + eps);
    for (let d = 0; d < D; d++) out[t * D + d] = (x[t * D + d] - mean) * inv * w[d] + b[d];
  }
  return out;
}

/** y = x W^T + b for x (T, In), W (Out, In): nn.Linear. */
function linear(x, T, In, W, b, Out) {
  const y = new Float64Array(T * Out);
  for (let t = 0; t < T; t++) {
    for (let o = 0; o < Out; o++) {
      let s = b ? b[o] : 0;
      const wo = o * In;
      const xt = t * In;
      for (let i = 0; i < In; i++) s += x[xt + i] * W[wo + i];
      y[t * Out + o] = s;
    }
  }
  return y;
}

/**
 * Run the model on one image (Float32Array or Array, C*H*W, channel first).
 * Returns {logits, probs, attn: [layer] -> Float64Array(heads*T*T)}.
 */
export function forward(w, cfg, image) {
  const { patch_size: P, in_chans: C, dim: D, depth: L, heads: Hh } = cfg;
  const [Hi, Wi] = cfg.image_hw;
  const gh = Hi / P;
  const gw = Wi / P;
  const N = gh * gw;
  const T = N + 1;
  const Dh = D / Hh;
  const M = cfg.mlp_dim;
  const eps = cfg.eps;
  const pw = w["patch_embed.proj.weight"];
  const pb = w["patch_embed.proj.bias"];
  let x = new Float64Array(T * D);
  for (let d = 0; d < D; d++) x[d] = w.cls_token[d];
  for (let gy = 0; gy < gh; gy++) {
    for (let gx = 0; gx < gw; gx++) {
      const n = gy * gw + gx;
      for (let d = 0; d < D; d++) {
        let s = pb[d];
        for (let c = 0; c < C; c++) {
          for (let py = 0; py < P; py++) {
            for (let px = 0; px < P; px++) {
              s += pw[((d * C + c) * P + py) * P + px] * image[(c * Hi + gy * P + py) * Wi + gx * P + px];
            }
          }
        }
        x[(n + 1) * D + d] = s;
      }
    }
  }
  if (w.pos_embed) for (let i = 0; i < T * D; i++) x[i] += w.pos_embed[i];
  const attn = [];
  const scale = 1 / Math.sqrt(Dh);
  for (let l = 0; l < L; l++) {
    const p = `blocks.${l}.`;
    const n1 = layerNorm(x, T, D, w[`${p}norm1.weight`], w[`${p}norm1.bias`], eps);
    const qkv = linear(n1, T, D, w[`${p}attn.qkv.weight`], w[`${p}attn.qkv.bias`], 3 * D);
    const heads = new Float64Array(T * D);
    const A = new Float64Array(Hh * T * T);
    for (let hd = 0; hd < Hh; hd++) {
      for (let i = 0; i < T; i++) {
        let m = -Infinity;
        const row = hd * T * T + i * T;
        for (let j = 0; j < T; j++) {
          let s = 0;
          for (let e = 0; e < Dh; e++) s += qkv[i * 3 * D + hd * Dh + e] * scale * qkv[j * 3 * D + D + hd * Dh + e];
          A[row + j] = s;
          if (s > m) m = s;
        }
        let z = 0;
        for (let j = 0; j < T; j++) {
          A[row + j] = Math.exp(A[row + j] - m);
          z += A[row + j];
        }
        for (let j = 0; j < T; j++) A[row + j] /= z;
        for (let e = 0; e < Dh; e++) {
          let s = 0;
          for (let j = 0; j < T; j++) s += A[row + j] * qkv[j * 3 * D + 2 * D + hd * Dh + e];
          heads[i * D + hd * Dh + e] = s;
        }
      }
    }
    attn.push(A);
    const a = linear(heads, T, D, w[`${p}attn.proj.weight`], w[`${p}attn.proj.bias`], D);
    for (let i = 0; i < T * D; i++) x[i] += a[i];
    const n2 = layerNorm(x, T, D, w[`${p}norm2.weight`], w[`${p}norm2.bias`], eps);
    const f1 = linear(n2, T, D, w[`${p}mlp.fc1.weight`], w[`${p}mlp.fc1.bias`], M);
    for (let i = 0; i < f1.length; i++) f1[i] = gelu(f1[i]);
    const f2 = linear(f1, T, M, w[`${p}mlp.fc2.weight`], w[`${p}mlp.fc2.bias`], D);
    for (let i = 0; i < T * D; i++) x[i] += f2[i];
  }
  const xn = layerNorm(x, T, D, w["norm.weight"], w["norm.bias"], eps);
  let pooled;
  if (cfg.pool === "cls") pooled = xn.slice(0, D);
  else {
    pooled = new Float64Array(D);
    for (let t = 1; t < T; t++) for (let d = 0; d < D; d++) pooled[d] += xn[t * D + d] / N;
  }
  const K = cfg.num_classes;
  const logits = Array.from(linear(pooled, 1, D, w["head.weight"], w["head.bias"], K));
  const mx = Math.max(...logits);
  const e = logits.map((v) => Math.exp(v - mx));
  const s = e.reduce((u, v) => u + v, 0);
  return { logits, probs: e.map((v) => v / s), attn, T, heads: Hh };
}

/** vitbook.analysis.attention_rollout for one image: Float64Array(T*T), rows sum to one. */
export function rollout(attn, T, heads, alpha) {
  let R = null;
  for (const W of attn) {
    const A = new Float64Array(T * T);
    for (let hd = 0; hd < heads; hd++) for (let i = 0; i < T * T; i++) A[i] += W[hd * T * T + i] / heads;
    for (let i = 0; i < T; i++) {
      let z = 0;
      for (let j = 0; j < T; j++) {
        A[i * T + j] = (1 - alpha) * A[i * T + j] + (i === j ? alpha : 0);
        z += A[i * T + j];
      }
      for (let j = 0; j < T; j++) A[i * T + j] /= z;
    }
    if (!R) R = A;
    else {
      const next = new Float64Array(T * T);
      for (let i = 0; i < T; i++)
        for (let k = 0; k < T; k++) {
          const a = A[i * T + k];
          if (a === 0) continue;
          for (let j = 0; j < T; j++) next[i * T + j] += a * R[k * T + j];
        }
      R = next;
    }
  }
  return R;
}

/** The weights of data.arrays whose names start with "w:" (the engine's convention here). */
export function weightsFrom(arrays) {
  const w = {};
  for (const [name, a] of Object.entries(arrays)) if (name.startsWith("w:")) w[name.slice(2)] = a.data;
  return w;
}
