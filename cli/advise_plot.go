package cli

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/tierfs/tierfs/advise"
)

// The --plot image: plotWidth x plotHeight inches at plotDPI, i.e. 1000 x 750 pixels.
const (
	plotWidth  = 10 * vg.Inch
	plotHeight = 7.5 * vg.Inch
	plotDPI    = 100
	legendW    = 2.1 * vg.Inch // the column right of the panels that holds the legend
	sans       = "Sans"        // Liberation Sans, which gonum/plot embeds (its default is Serif)
)

var (
	colLine   = color.RGBA{120, 120, 120, 255}
	colRec    = color.RGBA{200, 30, 30, 255}
	colBudget = color.RGBA{235, 235, 235, 255}
)

// bottleneckStyle is how a point whose bottleneck is name is drawn: shape and colour both differ,
// so the plot reads in grey too.
func bottleneckStyle(name string) (draw.GlyphDrawer, color.Color) {
	switch name {
	case "ssd":
		return draw.CircleGlyph{}, color.RGBA{31, 119, 180, 255}
	case "pcie", "host-copy":
		return draw.PyramidGlyph{}, color.RGBA{255, 127, 14, 255}
	case "sample":
		return draw.BoxGlyph{}, color.RGBA{44, 160, 44, 255}
	case "train":
		return draw.CrossGlyph{}, color.RGBA{148, 103, 189, 255}
	}
	return draw.RingGlyph{}, color.Black
}

// writePlot writes a PNG of the advice to path: two panels over the SSD count, the predicted
// seeds/s above and TPC below, each point marked by its bottleneck, the recommended count marked
// and labelled, configurations over the budget shaded, and a legend. The numbers are in the
// table and the JSON.
func writePlot(path, dataset string, a *advise.Advice) error {
	img, err := drawAdvice(dataset, a)
	if err != nil {
		return fmt.Errorf("--plot %s: %w", path, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--plot: %w", err) // the *PathError names the path
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("--plot: writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--plot: writing %s: %w", path, err)
	}
	return nil
}

func drawAdvice(dataset string, a *advise.Advice) (*vgimg.Canvas, error) {
	if len(a.Configs) == 0 {
		return nil, fmt.Errorf("no configurations to plot")
	}
	seeds := plot.New()
	tpc := plot.New()
	title := "tierfs advise: " + dataset
	if dataset == "" {
		title = "tierfs advise"
	}
	seeds.Title.Text = title + "\n" + adviceSubtitle(a)
	seeds.Title.TextStyle.Font.Size = vg.Points(13)
	seeds.Title.Padding = vg.Points(8)
	seeds.Y.Label.Text = "predicted seeds/s"
	tpc.Y.Label.Text = "TPC (seeds/s per unit of price)"
	tpc.X.Label.Text = "SSDs"

	lo, hi := a.Configs[0].SSDs, a.Configs[len(a.Configs)-1].SSDs
	maxSeeds, maxTPC := 0.0, 0.0
	for _, c := range a.Configs {
		if finite(c.SeedsPerS) {
			maxSeeds = max(maxSeeds, c.SeedsPerS)
		}
		if finite(c.TPC) {
			maxTPC = max(maxTPC, c.TPC)
		}
	}
	// Configurations over the budget: a shaded band, always the highest counts (price grows with Q).
	over := -1
	for _, c := range a.Configs {
		if !c.InBudget {
			over = c.SSDs
			break
		}
	}
	if over >= 0 {
		band := &xBand{from: float64(over) - 0.5, to: float64(hi) + 0.5, color: colBudget}
		seeds.Add(band)
		tpc.Add(band)
	}

	for _, panel := range []struct {
		p    *plot.Plot
		top  float64
		head float64 // headroom above the highest point, for the recommended label
	}{{seeds, maxSeeds, 1.1}, {tpc, maxTPC, 1.3}} {
		p := panel.p
		p.X.Min, p.X.Max = float64(lo)-0.5, float64(hi)+0.5
		p.X.Tick.Marker = plot.TickerFunc(integerTicks)
		p.Y.Min, p.Y.Max = 0, panel.top*panel.head
		if !(p.Y.Max > 0) {
			p.Y.Max = 1
		}
		p.Y.Tick.Marker = plot.TickerFunc(siTicks)
		p.Y.Padding, p.X.Padding = 0, 0
		grid := plotter.NewGrid()
		grid.Vertical.Width = 0
		p.Add(grid)
	}
	// The X labels live on the lower panel only.
	seeds.X.Tick.Marker = plot.TickerFunc(func(lo, hi float64) []plot.Tick {
		ts := integerTicks(lo, hi)
		for i := range ts {
			ts[i].Label = ""
		}
		return ts
	})

	legend := plot.NewLegend()
	legend.Top = true
	legend.Left = true
	legend.TextStyle.Font.Size = vg.Points(11)
	legend.TextStyle.Font.Variant = sans
	legend.Padding = vg.Points(4)
	for _, p := range []*plot.Plot{seeds, tpc} {
		for _, f := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font, &p.X.Tick.Label.Font, &p.Y.Tick.Label.Font} {
			f.Variant = sans
		}
	}

	if err := addPoints(a, seeds, tpc, &legend); err != nil {
		return nil, err
	}
	if err := markRecommended(a, seeds, tpc, &legend, lo, hi, maxSeeds); err != nil {
		return nil, err
	}
	if over >= 0 {
		legend.Add(fmt.Sprintf("over budget (%s)", trimFloat(a.Prices.Budget)), &xBand{color: colBudget})
	}

	img := vgimg.NewWith(vgimg.UseWH(plotWidth, plotHeight), vgimg.UseDPI(plotDPI))
	dc := draw.New(img)
	panels := draw.Crop(dc, 0, -legendW, 0, 0)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadY: vg.Points(6), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	cs := plot.Align([][]*plot.Plot{{seeds}, {tpc}}, tiles, panels)
	seeds.Draw(cs[0][0])
	tpc.Draw(cs[1][0])
	// The legend sits right of the panels, level with the top of the seeds/s panel's data area.
	lc := draw.Crop(dc, plotWidth-legendW+vg.Points(4), 0, 0, -(vg.Points(6) + seeds.Title.Padding + 2*vg.Points(18)))
	legend.Draw(lc)
	return img, nil
}

// adviceSubtitle is the plot's second title line: the workload, the mode and the prices.
func adviceSubtitle(a *advise.Advice) string {
	w, m := a.Workload, a.Machine
	fan := make([]string, len(w.Fanouts))
	for i, f := range w.Fanouts {
		fan[i] = strconv.Itoa(f)
	}
	sub := fmt.Sprintf("batch %d seeds, fanouts %s, %s mode", w.BatchSize, strings.Join(fan, ","), orMode(m.Mode))
	if m.TrainSeconds > 0 {
		sub += fmt.Sprintf(", train %.3g ms", 1e3*m.TrainSeconds)
	} else {
		sub += ", loader only"
	}
	sub += fmt.Sprintf("; SSD %s + machine %s", trimFloat(a.Prices.SSD), trimFloat(a.Prices.Machine))
	return sub
}

// addPoints draws the model's curve through every configuration and the points by bottleneck
// on both panels, and names them in legend.
func addPoints(a *advise.Advice, seeds, tpc *plot.Plot, legend *plot.Legend) error {
	seedsXY, tpcXY := plotter.XYs{}, plotter.XYs{}
	byNeck := map[string][2]plotter.XYs{}
	var necks []string
	for _, c := range a.Configs {
		x := float64(c.SSDs)
		if finite(c.SeedsPerS) {
			seedsXY = append(seedsXY, plotter.XY{X: x, Y: c.SeedsPerS})
		}
		if finite(c.TPC) {
			tpcXY = append(tpcXY, plotter.XY{X: x, Y: c.TPC})
		}
		if _, ok := byNeck[c.Bottleneck]; !ok {
			necks = append(necks, c.Bottleneck)
		}
		v := byNeck[c.Bottleneck]
		if finite(c.SeedsPerS) {
			v[0] = append(v[0], plotter.XY{X: x, Y: c.SeedsPerS})
		}
		if finite(c.TPC) {
			v[1] = append(v[1], plotter.XY{X: x, Y: c.TPC})
		}
		byNeck[c.Bottleneck] = v
	}
	var modelLine *plotter.Line
	for i, xy := range []plotter.XYs{seedsXY, tpcXY} {
		if len(xy) < 2 {
			continue
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return err
		}
		l.Color = colLine
		l.Width = vg.Points(1.5)
		[]*plot.Plot{seeds, tpc}[i].Add(l)
		modelLine = l
	}
	if modelLine != nil {
		legend.Add("model prediction", modelLine)
	}
	radius := vg.Points(4.5) // smaller markers where there are many points
	if n := len(a.Configs); n > 16 {
		radius = max(vg.Points(1.5), radius*vg.Length(math.Sqrt(16/float64(n))))
	}
	for _, n := range necks {
		shape, col := bottleneckStyle(n)
		drawn := false
		for i, xy := range byNeck[n] {
			if len(xy) == 0 {
				continue
			}
			s, err := plotter.NewScatter(xy)
			if err != nil {
				return err
			}
			s.GlyphStyle = draw.GlyphStyle{Shape: shape, Color: col, Radius: radius}
			[]*plot.Plot{seeds, tpc}[i].Add(s)
			drawn = true
		}
		if drawn {
			legend.Add("bottleneck: "+n, glyphThumb{Shape: shape, Color: col, Radius: vg.Points(4.5)})
		}
	}

	return nil
}

// markRecommended marks the recommended count on both panels: a dashed line, a ring round its
// points, a label on the TPC panel (kept inside it; lo, hi: the SSD counts plotted; maxSeeds
// scales the seeds/s it quotes).
func markRecommended(a *advise.Advice, seeds, tpc *plot.Plot, legend *plot.Legend, lo, hi int, maxSeeds float64) error {
	var rec *advise.Config
	for i := range a.Configs {
		if a.Configs[i].SSDs == a.Recommended {
			rec = &a.Configs[i]
		}
	}
	if rec != nil {
		x := float64(rec.SSDs)
		vl := &xLine{x: x, style: draw.LineStyle{Color: colRec, Width: vg.Points(1.2), Dashes: []vg.Length{vg.Points(5), vg.Points(3)}}}
		seeds.Add(vl)
		tpc.Add(vl)
		ring := draw.GlyphStyle{Shape: draw.RingGlyph{}, Color: colRec, Radius: vg.Points(8)}
		for _, pt := range []struct {
			p *plot.Plot
			y float64
		}{{seeds, rec.SeedsPerS}, {tpc, rec.TPC}} {
			if !finite(pt.y) {
				continue
			}
			s, err := plotter.NewScatter(plotter.XYs{{X: x, Y: pt.y}})
			if err != nil {
				return err
			}
			s.GlyphStyle = ring
			pt.p.Add(s)
		}
		legend.Add(fmt.Sprintf("recommended: %d SSD(s)", rec.SSDs), vl)
		if finite(rec.TPC) {
			text := fmt.Sprintf("recommended: %d SSD(s)\n%s seeds/s, TPC %.3g, price %s",
				rec.SSDs, siLabel(rec.SeedsPerS, siScale(maxSeeds)), rec.TPC, trimFloat(rec.Price))
			lab, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: rec.TPC}}, Labels: []string{text}})
			if err != nil {
				return err
			}
			sty := &lab.TextStyle[0]
			sty.Color = colRec
			sty.Font.Size = vg.Points(10)
			sty.Font.Variant = sans
			sty.YAlign = draw.YBottom
			lab.Offset = vg.Point{X: vg.Points(10), Y: vg.Points(10)}
			if hi > lo && float64(rec.SSDs-lo)/float64(hi-lo) > 0.5 {
				sty.XAlign = draw.XRight // keep the label inside the panel
				lab.Offset.X = -lab.Offset.X
			}
			tpc.Add(lab)
		}
	}
	return nil
}

func orMode(m advise.Mode) advise.Mode {
	if m == "" {
		return advise.Overlapped
	}
	return m
}

func finite(v float64) bool { return !math.IsInf(v, 0) && !math.IsNaN(v) }

// integerTicks labels whole SSD counts at a step of 1, 2 or 5 times a power of ten, at most
// about 10 labels, with unlabelled ticks at every count between when they are not too dense.
func integerTicks(lo, hi float64) []plot.Tick {
	a, b := int(math.Ceil(lo)), int(math.Floor(hi))
	if b < a {
		return nil
	}
	step := 1
	for n := 0; (b-a)/step > 10; n++ {
		step = []int{1, 2, 5}[n%3] * int(math.Pow10(n/3))
	}
	var ts []plot.Tick
	for v := a; v <= b; v++ {
		switch {
		case v%step == 0 || (v == a && step == 1):
			ts = append(ts, plot.Tick{Value: float64(v), Label: strconv.Itoa(v)})
		case b-a <= 64:
			ts = append(ts, plot.Tick{Value: float64(v)})
		}
	}
	return ts
}

// siTicks labels round values (1, 2, 2.5 or 5 times a power of ten apart, 4 to 8 of them over
// the axis), with k or M where the values are large, and an unlabelled tick halfway between.
func siTicks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if !(span > 0) || !finite(span) {
		return nil
	}
	mag := math.Pow10(int(math.Floor(math.Log10(span / 5))))
	step := 10 * mag
	for _, f := range []float64{1, 2, 2.5, 5} {
		if span/(f*mag) <= 8 {
			step = f * mag
			break
		}
	}
	scale := siScale(max(math.Abs(lo), math.Abs(hi)))
	var ts []plot.Tick
	for i := math.Ceil(lo / step * 2); i/2*step <= hi+1e-9*span; i++ {
		v := i / 2 * step
		t := plot.Tick{Value: v}
		if math.Mod(i, 2) == 0 {
			t.Label = siLabel(math.Round(v/step)*step, scale)
		}
		ts = append(ts, t)
	}
	return ts
}

func siScale(v float64) float64 {
	switch {
	case v >= 1e7:
		return 1e6
	case v >= 1e4:
		return 1e3
	}
	return 1
}

func siLabel(v, scale float64) string {
	if v == 0 {
		return "0"
	}
	s := strconv.FormatFloat(v/scale, 'g', 4, 64)
	switch scale {
	case 1e6:
		return s + "M"
	case 1e3:
		return s + "k"
	}
	return s
}

func trimFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

// xLine is a vertical line at x across the panel's data area.
type xLine struct {
	x     float64
	style draw.LineStyle
}

func (l *xLine) Plot(c draw.Canvas, p *plot.Plot) {
	tx, _ := p.Transforms(&c)
	c.StrokeLine2(l.style, tx(l.x), c.Min.Y, tx(l.x), c.Max.Y)
}

func (l *xLine) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(l.style, c.Min.X, y, c.Max.X, y)
}

// xBand shades the data area between x = from and x = to.
type xBand struct {
	from, to float64
	color    color.Color
}

func (b *xBand) Plot(c draw.Canvas, p *plot.Plot) {
	tx, _ := p.Transforms(&c)
	x0, x1 := tx(b.from), tx(b.to)
	c.FillPolygon(b.color, c.ClipPolygonXY([]vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}}))
}

func (b *xBand) Thumbnail(c *draw.Canvas) {
	c.FillPolygon(b.color, []vg.Point{c.Min, {X: c.Max.X, Y: c.Min.Y}, c.Max, {X: c.Min.X, Y: c.Max.Y}})
}

// glyphThumb is a legend entry's marker at full size, however small the points are drawn.
type glyphThumb draw.GlyphStyle

func (g glyphThumb) Thumbnail(c *draw.Canvas) { c.DrawGlyph(draw.GlyphStyle(g), c.Center()) }
