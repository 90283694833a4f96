// Draw off-screen, then copy to the visible canvas. Setting `ctx.font` on a canvas that sits in the
// document makes Chrome recompute the page's style on the spot; on an off-screen canvas it does not, so
// a repaint never forces a style pass in the middle of a step.
export type Ctx2D = CanvasRenderingContext2D | OffscreenCanvasRenderingContext2D;

export class Backbuffer {
  readonly canvas: OffscreenCanvas | HTMLCanvasElement;
  readonly ctx: Ctx2D;

  constructor() {
    this.canvas = typeof OffscreenCanvas !== "undefined" ? new OffscreenCanvas(1, 1) : document.createElement("canvas");
    this.ctx = this.canvas.getContext("2d") as Ctx2D;
  }

  /** Size to the visible canvas's pixels and return a context scaled to CSS pixels. */
  begin(target: HTMLCanvasElement, ratio: number): Ctx2D {
    if (this.canvas.width !== target.width || this.canvas.height !== target.height) {
      this.canvas.width = target.width;
      this.canvas.height = target.height;
    }
    this.ctx.setTransform(ratio, 0, 0, ratio, 0, 0);
    return this.ctx;
  }

  /** Copy the finished frame to the visible canvas. (Handing the bitmap over instead, through a
   *  "bitmaprenderer" context, measured slower here: the off-screen canvas then allocates a new buffer each
   *  frame.) */
  present(target: HTMLCanvasElement): void {
    const g = target.getContext("2d")!;
    g.setTransform(1, 0, 0, 1, 0, 0);
    g.clearRect(0, 0, target.width, target.height);
    g.drawImage(this.canvas, 0, 0);
  }
}
