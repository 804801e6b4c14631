package store

import (
	"image"
	"image/color"
	"testing"
)

func TestDecodedBytes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		model color.Model
		want  int64
	}{
		{"gray", color.GrayModel, 100 * 50},
		{"paletted", color.Palette{color.Black, color.White}, 100 * 50},
		{"16-bit gray", color.Gray16Model, 2 * 100 * 50},
		{"YCbCr", color.YCbCrModel, 3 * 100 * 50},
		{"NRGBA", color.NRGBAModel, 4 * 100 * 50},
		{"16-bit RGBA", color.NRGBA64Model, 8 * 100 * 50},
		{"unknown", nil, 8 * 100 * 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := decodedBytes(image.Config{ColorModel: tc.model, Width: 100, Height: 50}); got != tc.want {
				t.Errorf("%d bytes, want %d", got, tc.want)
			}
		})
	}
}
