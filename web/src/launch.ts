// A launch as the page holds it (ConfigParams), and what GET /api/limits says a launch may be: the algorithms and
// the launch fields (the table flashviz.model.fields, at the API). validate.ts checks a launch against them, state.ts
// reads one from a URL and writes it back.

/** A launch: the algorithm and the value of each launch field the API takes (/api/limits' `fields`, from the table
 *  flashviz.model.fields): those named here, and any other the table lists (read, written and sent as they are). */
export interface ConfigParams {
  algo: string; // an algorithm of /api/limits' `algos`; "" for the server's default (its `default`)
  n: number; // sequence length N
  d: number; // head dimension D
  br: number; // rows of Q per block (Br)
  bc: number; // columns of K/V per tile (Bc)
  seed: number; // random inputs are drawn from this seed
  scale: number | null; // softmax scale; null means the server's default 1/sqrt(D)
  causal: boolean; // mask keys after the query row (tiles wholly above the diagonal are skipped)
  [field: string]: string | number | boolean | null;
}

/** One entry of GET /api/limits' `algos`. */
export interface AlgoInfo {
  name: string;
  title: string;
  causal: boolean;
  pass: "forward" | "backward";
  max_n: number;
  /** why max_n is lower than the API's bound ("keeps S and P (N×N) in HBM"), else "" */
  max_n_reason?: string;
  kernel_file?: string;
  /** the only values a field may take for its kernel (a Triton kernel's head dimensions and tiles), else null */
  allowed?: Record<string, number[]> | null;
  /** those rules in words */
  launch_rule?: string;
  /** its own defaults (a launch that shows it well): the page's form switches to them when it is picked */
  example?: Record<string, number> | null;
  /** why those are its defaults, in words */
  example_why?: string;
  /** the options of real models it runs (launch fields' names); the form shows their inputs only for it */
  options?: string[];
}

/** One launch field as GET /api/limits lists it (`fields`): a row of the table flashviz.model.fields, at the API. */
export interface LaunchField {
  name: string;
  /** int: an integer in min..max; number: finite, its magnitude in least..most, or empty; flag: true or false;
   *  choice: one of the algorithms (the picker); pick: a block (the block picker); ints: comma-separated integers
   *  ("16,0"), as many as `items` says, each in min..max, or empty (its default) */
  kind: "choice" | "int" | "number" | "flag" | "pick" | "ints";
  /** how the form and its messages name it ("Br"); "" where the form has no input for it */
  label: string;
  help: string;
  default: number | boolean | string | null;
  min?: number;
  max?: number;
  least?: number;
  most?: number;
  /** an algorithm may bring its own default for it (AlgoInfo.example) */
  own: boolean;
  /** what leaving it out means, where its default is null ("1/sqrt(D)"); an int or ints field with one may be left
   *  empty (its default) */
  empty: string;
  /** ints: how many integers, least and most */
  items?: [number, number];
  /** held in a config only where given (the options of real models: absent from plain attention's launches) */
  optional?: boolean;
}

/** GET /api/limits: inclusive integer ranges per field, and the algorithms. */
export type Limits = Record<"n" | "d" | "br" | "bc" | "seed", [number, number]> & {
  /** the launch fields the API takes: what the form and the URL accept (validate.ts, state.ts) */
  fields?: LaunchField[];
  algos?: AlgoInfo[];
  /** the algorithm a launch runs when none is named */
  default?: string;
  profile?: boolean;
};
