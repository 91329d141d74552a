/*
Copyright The OpenVPA Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package replay

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// Line is one series of a Plot.
type Line struct {
	Name  string
	Color string
	X, Y  []float64
	// Step draws a staircase (the value holds until the next point).
	Step bool
	// Markers draws a dot at every point, and no line unless Connect is set.
	Markers bool
	Connect bool
}

// Plot is a minimal line/scatter chart rendered as SVG.
type Plot struct {
	Title          string
	XLabel, YLabel string
	Lines          []Line
	// XMin/XMax/YMin/YMax fix the axis range when Fixed is set.
	Fixed                  bool
	XMin, XMax, YMin, YMax float64
}

const (
	plotW, plotH                       = 900, 460
	marginL, marginR, marginT, marginB = 80, 200, 40, 50
)

// WriteSVG renders p to w.
func (p *Plot) WriteSVG(w io.Writer) error {
	xmin, xmax, ymin, ymax := p.XMin, p.XMax, p.YMin, p.YMax
	if !p.Fixed {
		xmin, xmax, ymin, ymax = math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
		for _, l := range p.Lines {
			for i := range l.X {
				xmin, xmax = math.Min(xmin, l.X[i]), math.Max(xmax, l.X[i])
				ymin, ymax = math.Min(ymin, l.Y[i]), math.Max(ymax, l.Y[i])
			}
		}
		if math.IsInf(xmin, 0) {
			xmin, xmax, ymin, ymax = 0, 1, 0, 1
		}
		ymin = math.Min(ymin, 0)
	}
	if xmax <= xmin {
		xmax = xmin + 1
	}
	if ymax <= ymin {
		ymax = ymin + 1
	}
	xt := niceTicks(xmin, xmax, 8)
	yt := niceTicks(ymin, ymax, 6)
	xmin, xmax = math.Min(xmin, xt[0]), math.Max(xmax, xt[len(xt)-1])
	ymin, ymax = math.Min(ymin, yt[0]), math.Max(ymax, yt[len(yt)-1])
	iw, ih := float64(plotW-marginL-marginR), float64(plotH-marginT-marginB)
	px := func(x float64) float64 { return marginL + (x-xmin)/(xmax-xmin)*iw }
	py := func(y float64) float64 { return marginT + ih - (y-ymin)/(ymax-ymin)*ih }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", plotW, plotH, plotW, plotH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="22" font-size="15">%s</text>`+"\n", marginL, html.EscapeString(p.Title))
	for _, t := range xt {
		x := px(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`+"\n", x, marginT, x, marginT+ih)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x, marginT+ih+16, tickLabel(t))
	}
	for _, t := range yt {
		y := py(t)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#e4e4e4"/>`+"\n", marginL, y, marginL+iw, y)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginL-6, y+4, tickLabel(t))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%.0f" height="%.0f" fill="none" stroke="#444"/>`+"\n", marginL, marginT, iw, ih)
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", marginL+iw/2, plotH-10, html.EscapeString(p.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">%s</text>`+"\n", marginT+ih/2, html.EscapeString(p.YLabel))
	for i, l := range p.Lines {
		color := l.Color
		if color == "" {
			color = palette[i%len(palette)]
		}
		if (!l.Markers || l.Connect) && len(l.X) > 0 {
			var pts strings.Builder
			for j := range l.X {
				if l.Step && j > 0 {
					fmt.Fprintf(&pts, "%.1f,%.1f ", px(l.X[j]), py(l.Y[j-1]))
				}
				fmt.Fprintf(&pts, "%.1f,%.1f ", px(l.X[j]), py(l.Y[j]))
			}
			fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="1.3" points="%s"/>`+"\n", color, strings.TrimSpace(pts.String()))
		}
		if l.Markers {
			for j := range l.X {
				fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s"/>`+"\n", px(l.X[j]), py(l.Y[j]), color)
			}
		}
		ly := marginT + 10 + i*18
		fmt.Fprintf(&b, `<rect x="%.0f" y="%d" width="14" height="4" fill="%s"/>`+"\n", marginL+iw+12, ly, color)
		fmt.Fprintf(&b, `<text x="%.0f" y="%d">%s</text>`+"\n", marginL+iw+32, ly+6, html.EscapeString(l.Name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#17becf", "#7f7f7f"}

// niceTicks returns about n round tick values covering [lo, hi].
func niceTicks(lo, hi float64, n int) []float64 {
	span := hi - lo
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	step := mag
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			step = m * mag
			break
		}
	}
	var out []float64
	for t := math.Floor(lo/step) * step; t <= hi+step*1e-9; t += step {
		out = append(out, t)
		if len(out) > 4*n {
			break
		}
	}
	if len(out) == 0 || out[len(out)-1] < hi {
		out = append(out, math.Ceil(hi/step)*step)
	}
	return out
}

func tickLabel(v float64) string {
	if math.Abs(v) < 1e-12 {
		return "0"
	}
	return fmt.Sprintf("%g", math.Round(v*1e6)/1e6)
}
