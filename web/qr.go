package web

import (
	"encoding/base64"
	"fmt"

	qrcode "github.com/skip2/go-qrcode"
)

// qrDataURL draws text as a QR code, a PNG in a data: URL (the admin's CSP
// allows data: images): the Pix code, for a support member to check what
// the payer scans. The library is skip2/go-qrcode, the encoder most Go
// projects use; a QR encoder is not ours to write.
func qrDataURL(text string) (string, error) {
	png, err := qrcode.Encode(text, qrcode.Medium, 192)
	if err != nil {
		return "", fmt.Errorf("draw the QR code: %w", err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(png), nil
}
